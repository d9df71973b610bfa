package portshare

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// testPort is a Splitter on 127.0.0.1 whose refusals are recorded.
type testPort struct {
	*Splitter
	mu      sync.Mutex
	refused []string
}

func startPort(t *testing.T, cfg Config) *testPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &testPort{}
	cfg.Refused = func(reason string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.refused = append(p.refused, reason)
	}
	p.Splitter = New(ln, cfg)
	done := make(chan error, 1)
	go func() { done <- p.Serve() }()
	t.Cleanup(func() {
		require.NoError(t, p.Close())
		require.NoError(t, <-done)
	})
	return p
}

func (p *testPort) refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

func (p *testPort) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// requireClosedByServer waits (bounded) for the server to close c: a read
// that ends without data.
func requireClosedByServer(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n)
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open: %v", err)
}

// requireRefusals waits for the refusals the splitter records after it
// closes a connection.
func (p *testPort) requireRefusals(t *testing.T, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.refusals()) >= len(want) }, 10*time.Second, time.Millisecond)
	require.Equal(t, want, p.refusals())
}

// acceptHTTP sends an HTTP/1 request line on a new connection and returns
// it with the server side the splitter handed over.
func (p *testPort) acceptHTTP(t *testing.T) (client, server net.Conn) {
	t.Helper()
	client = p.dial(t)
	_, err := client.Write([]byte("GET / HTTP/1.1\r\n"))
	require.NoError(t, err)
	server, err = p.HTTP().Accept()
	require.NoError(t, err)
	line, err := bufio.NewReader(server).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "GET / HTTP/1.1\r\n", line, "the sniffed byte is replayed")
	return client, server
}

func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		reason string
	}{
		{"per client", Config{MaxConnsPerClient: 2, MaxConns: 100, GRPC: true}, RefusedMaxConnsPerClient},
		{"in total", Config{MaxConns: 2, GRPC: true}, RefusedMaxConns},
		{"in total without gRPC", Config{MaxConns: 2}, RefusedMaxConns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPort(t, tc.cfg)
			_, first := p.acceptHTTP(t)
			p.acceptHTTP(t)

			over := p.dial(t)
			requireClosedByServer(t, over)
			p.requireRefusals(t, tc.reason)

			// A closed connection gives its place back.
			require.NoError(t, first.Close())
			_, again := p.acceptHTTP(t)
			require.NoError(t, again.Close())
		})
	}
}

// TestStartTimeout: a connection that shows nothing, or only part of the
// HTTP/2 preface, is closed at --conn-start-timeout and gives its place
// back.
func TestStartTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  []byte
		noGRPC bool
	}{
		{"silent", nil, false},
		{"silent, gRPC off", nil, true},
		{"half a preface", []byte(http2.ClientPreface[:12]), false},
		{"a preface and no request", []byte(http2.ClientPreface), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPort(t, Config{StartTimeout: 50 * time.Millisecond, MaxConns: 1, GRPC: !tc.noGRPC})
			c := p.dial(t)
			_, err := c.Write(tc.first)
			require.NoError(t, err)
			requireClosedByServer(t, c)
			p.requireRefusals(t, RefusedStartTimeout)
			_, server := p.acceptHTTP(t) // the one place is free again
			require.NoError(t, server.Close())
		})
	}
}

// TestMalformedHTTP2IsClosed: the 1 MiB frame of unknown type after the
// preface closes the connection after its 9-byte header, unread.
func TestMalformedHTTP2IsClosed(t *testing.T) {
	p := startPort(t, Config{GRPC: true})
	c := p.dial(t)
	go func() {
		// Keeps writing until the server cuts the connection.
		_, _ = c.Write(append([]byte(http2.ClientPreface), largeFrameHeader(0xee, 1<<20)...))
		_, _ = io.Copy(c, zeroReader{})
	}()
	requireClosedByServer(t, c)
	p.requireRefusals(t, RefusedMalformed)
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestCloseEndsSniffing: Close does not wait for a silent connection's
// start timeout.
func TestCloseEndsSniffing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := New(ln, Config{StartTimeout: time.Hour, GRPC: true})
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.sniffing) == 1
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.NoError(t, <-done)
	requireClosedByServer(t, c)
	_, err = s.HTTP().Accept()
	require.ErrorIs(t, err, net.ErrClosed)
}

func TestClientOf(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7:4000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:4000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:4000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:1", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:1", "fe80::/64"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		require.NoError(t, err)
		require.Equal(t, tc.want, clientOf(addr), tc.addr)
	}
}
