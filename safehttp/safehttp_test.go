package safehttp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/safehttp"
	"github.com/stretchr/testify/require"
)

// serveOn starts a test server on a specific loopback address.
func serveOn(t *testing.T, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	require.NoError(t, err)
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write([]byte("hello"))
})

func TestRefusesInternalAddresses(t *testing.T) {
	target := serveOn(t, "127.0.0.1", ok)
	// 127.0.0.2 plays a public host: allowed by an operator exception.
	public := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebind.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "metadata.test":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		case "public.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
		}
		return nil, errors.New("no such host")
	}
	c := safehttp.New(safehttp.Config{
		Allow:      []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		LookupHost: lookup,
	})
	port := target.Listener.Addr().(*net.TCPAddr).Port
	pubPort := public.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name, url string
		want      error
	}{
		{"loopback literal", target.URL, safehttp.ErrBlocked},
		{"private 10.x", "http://10.1.2.3/x.png", safehttp.ErrBlocked},
		{"private 192.168", "http://192.168.0.1/", safehttp.ErrBlocked},
		{"metadata", "http://169.254.169.254/latest/meta-data/", safehttp.ErrBlocked},
		{"ipv6 loopback", "http://[::1]/", safehttp.ErrBlocked},
		{"ipv4-mapped ipv6 loopback", "http://[::ffff:127.0.0.1]/", safehttp.ErrBlocked},
		{"localhost name", "http://localhost/", safehttp.ErrBlocked},
		{"name resolving to loopback", "http://rebind.test:" + itoa(port) + "/", safehttp.ErrBlocked},
		{"name resolving to metadata", "http://metadata.test/", safehttp.ErrBlocked},
		{"redirect to loopback", "http://public.test:" + itoa(pubPort) + "/?to=" + target.URL, safehttp.ErrBlocked},
		{"redirect to metadata", "http://public.test:" + itoa(pubPort) + "/?to=http://169.254.169.254/", safehttp.ErrBlocked},
		{"redirect to a name resolving to loopback", "http://public.test:" + itoa(pubPort) + "/?to=http://rebind.test:" + itoa(port) + "/", safehttp.ErrBlocked},
		{"file scheme", "file:///etc/passwd", safehttp.ErrScheme},
		{"gopher scheme", "gopher://example.com/", safehttp.ErrScheme},
		{"relative", "/x.png", safehttp.ErrScheme},
		{"credentials", "http://user:pw@public.test/", safehttp.ErrScheme},
		{"unresolvable", "http://nowhere.test/", safehttp.ErrUnresolvable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Get(context.Background(), tc.url)
			require.ErrorIs(t, err, tc.want)
		})
	}

	// The allowed host itself is reachable.
	resp, err := c.Get(context.Background(), "http://public.test:"+itoa(pubPort)+"/?to=http://public.test:"+itoa(pubPort)+"/")
	require.Error(t, err) // a redirect loop: too many hops
	require.ErrorIs(t, err, safehttp.ErrTooManyHops)
	require.Nil(t, resp)
}

func TestAllowPrivateForLocalTesting(t *testing.T) {
	s := serveOn(t, "127.0.0.1", ok)
	c := safehttp.New(safehttp.Config{AllowPrivate: true})
	resp, err := c.Get(context.Background(), s.URL+"/x")
	require.NoError(t, err)
	require.Equal(t, "hello", string(resp.Body))
	require.Equal(t, "image/png", resp.ContentType)
	require.False(t, c.RequireHTTPS())
}

func TestLimits(t *testing.T) {
	big := serveOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
	}))
	missing := serveOn(t, "127.0.0.1", http.NotFoundHandler())
	c := safehttp.New(safehttp.Config{AllowPrivate: true, MaxBytes: 1000})
	_, err := c.Get(context.Background(), big.URL)
	require.ErrorIs(t, err, safehttp.ErrTooLarge)
	_, err = c.Get(context.Background(), missing.URL)
	var se *safehttp.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 404, se.Code)
}

func TestIsPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "127.0.0.1": false, "10.0.0.1": false, "172.16.5.4": false,
		"192.168.1.1": false, "169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "::": false,
		"fd00:ec2::254": false, "fe80::1": false, "224.0.0.1": false, "255.255.255.255": false, "::ffff:10.0.0.1": false,
	} {
		require.Equal(t, want, safehttp.IsPublic(netip.MustParseAddr(addr)), addr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
