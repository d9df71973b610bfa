// Package portshare serves REST and gRPC on one listening port. It counts
// connections (in total and per client address, refusing those over the
// limits), gives each new one a short time to show what it speaks, reads at
// most a few KiB of it to decide, and hands it to the HTTP or the gRPC
// listener with those bytes replayed.
package portshare

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Config bounds the connections of the port.
type Config struct {
	// MaxConns and MaxConnsPerClient bound the open connections, in total
	// and per client (IPv4 address or IPv6 /64); 0 is no limit. A
	// connection over them is closed as soon as it is accepted.
	MaxConns, MaxConnsPerClient int
	// StartTimeout is how long a new connection may take to show what it
	// speaks: the first byte of an HTTP/1 request, or the HTTP/2 preface up
	// to its first request's content-type. Default 5s.
	StartTimeout time.Duration
	// GRPC splits the connections; false hands every one to HTTP once its
	// first byte comes.
	GRPC bool
	// Refused, when set, learns each refused connection's reason (the
	// Refused* constants).
	Refused func(reason string)
}

// Splitter accepts the connections of one listener for two servers.
type Splitter struct {
	ln     net.Listener
	cfg    Config
	counts *connCounts
	http   *childListener
	grpc   *childListener

	mu       sync.Mutex
	closed   bool
	sniffing map[net.Conn]struct{}
}

// New splits ln; Serve starts accepting.
func New(ln net.Listener, cfg Config) *Splitter {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 5 * time.Second
	}
	return &Splitter{
		ln: ln, cfg: cfg,
		counts:   &connCounts{maxTotal: cfg.MaxConns, maxPerClient: cfg.MaxConnsPerClient, perClient: map[string]int{}},
		http:     newChildListener(ln.Addr()),
		grpc:     newChildListener(ln.Addr()),
		sniffing: map[net.Conn]struct{}{},
	}
}

// HTTP is the listener of the HTTP/1 connections (all of them when
// Config.GRPC is false).
func (s *Splitter) HTTP() net.Listener { return s.http }

// GRPC is the listener of the gRPC connections.
func (s *Splitter) GRPC() net.Listener { return s.grpc }

// Serve accepts connections until Close; it returns nil then.
func (s *Splitter) Serve() error {
	var backoff time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like pass; retry as
			// net/http does, backing off.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		client := clientOf(conn.RemoteAddr())
		if reason := s.counts.enter(client); reason != "" {
			s.refuse(conn, reason)
			continue
		}
		go s.route(&countedConn{Conn: conn, leave: func() { s.counts.leave(client) }})
	}
}

// route hands conn to the server that speaks it.
func (s *Splitter) route(conn net.Conn) {
	if !s.track(conn) {
		_ = conn.Close()
		return
	}
	proto, buffered, err := sniff(conn, time.Now().Add(s.cfg.StartTimeout), s.cfg.GRPC)
	s.untrack(conn)
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			s.refuse(conn, RefusedStartTimeout)
		case errors.Is(err, errMalformed):
			s.refuse(conn, RefusedMalformed)
		default: // closed by the client or by Close
			_ = conn.Close()
		}
		return
	}
	replay := &replayConn{Conn: conn, pending: buffered}
	if proto == toGRPC {
		s.grpc.deliver(replay)
	} else {
		s.http.deliver(replay)
	}
}

func (s *Splitter) refuse(conn net.Conn, reason string) {
	_ = conn.Close()
	if s.cfg.Refused != nil {
		s.cfg.Refused(reason)
	}
}

// track notes a connection being sniffed, so that Close can end it.
func (s *Splitter) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sniffing[conn] = struct{}{}
	return true
}

func (s *Splitter) untrack(conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sniffing, conn)
}

func (s *Splitter) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops accepting, closes the connections not handed over yet and
// both listeners; handed-over connections belong to their servers.
func (s *Splitter) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.sniffing {
		_ = c.Close()
	}
	clear(s.sniffing)
	s.mu.Unlock()
	err := s.ln.Close()
	s.http.Close()
	s.grpc.Close()
	return err
}

// childListener is one server's share of the port.
type childListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newChildListener(addr net.Addr) *childListener {
	return &childListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// deliver waits for the server to accept conn, or closes conn when the
// listener is closed.
func (l *childListener) deliver(conn net.Conn) {
	select {
	case l.conns <- conn:
	case <-l.done:
		_ = conn.Close()
	}
}

func (l *childListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *childListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *childListener) Addr() net.Addr { return l.addr }
