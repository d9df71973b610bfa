package portshare

import (
	"net"
	"net/netip"
	"sync"
)

// Refusal reasons, as Config.Refused receives them.
const (
	RefusedMaxConns          = "max_conns"
	RefusedMaxConnsPerClient = "max_conns_per_client"
	RefusedStartTimeout      = "start_timeout"
	RefusedMalformed         = "malformed"
)

// connCounts counts the open connections, in total and per client.
type connCounts struct {
	maxTotal, maxPerClient int // 0: no limit

	mu        sync.Mutex
	total     int
	perClient map[string]int
}

// enter counts a new connection of client, or returns why it may not open.
func (c *connCounts) enter(client string) (refusal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.maxTotal > 0 && c.total >= c.maxTotal {
		return RefusedMaxConns
	}
	if c.maxPerClient > 0 && c.perClient[client] >= c.maxPerClient {
		return RefusedMaxConnsPerClient
	}
	c.total++
	c.perClient[client]++
	return ""
}

func (c *connCounts) leave(client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.perClient[client]--; c.perClient[client] <= 0 {
		delete(c.perClient, client)
	}
}

// clientOf is the key a connection is counted under: its IPv4 address, or
// the /64 of its IPv6 address (one host commonly holds a whole /64).
func clientOf(addr net.Addr) string {
	var ap netip.AddrPort
	if ta, ok := addr.(*net.TCPAddr); ok {
		ap = ta.AddrPort()
	} else if parsed, err := netip.ParseAddrPort(addr.String()); err == nil {
		ap = parsed
	} else {
		return addr.String()
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// countedConn gives back its count when closed, once.
type countedConn struct {
	net.Conn
	once  sync.Once
	leave func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.leave)
	return c.Conn.Close()
}

// replayConn reads the bytes sniffing took before the connection's own.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		return c.Conn.Read(p)
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.pending = nil // the sniff buffer can go
	}
	return n, nil
}
