package safehttp_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
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
		case "compatible.test":
			return []netip.Addr{netip.MustParseAddr("::127.0.0.1")}, nil
		case "siit.test":
			return []netip.Addr{netip.MustParseAddr("::ffff:0:7f00:1")}, nil
		case "teredo.test":
			return []netip.Addr{netip.MustParseAddr("2001::1")}, nil
		case "relay.test":
			return []netip.Addr{netip.MustParseAddr("192.88.99.1")}, nil
		case "sitelocal.test":
			return []netip.Addr{netip.MustParseAddr("fec0::1")}, nil
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
		{"IPv4-compatible loopback literal", "http://[::127.0.0.1]/", safehttp.ErrBlocked},
		{"IPv4-compatible metadata literal", "http://[::a9fe:a9fe]/", safehttp.ErrBlocked},
		{"SIIT loopback literal", "http://[::ffff:0:7f00:1]/", safehttp.ErrBlocked},
		{"site-local literal", "http://[fec0::1]/", safehttp.ErrBlocked},
		{"Teredo literal", "http://[2001::1]/", safehttp.ErrBlocked},
		{"6to4 relay literal", "http://192.88.99.1/", safehttp.ErrBlocked},
		{"zoned link-local literal", "http://[fe80::1%25lo]/", safehttp.ErrBlocked},
		{"name resolving to IPv4-compatible loopback", "http://compatible.test:" + itoa(port) + "/", safehttp.ErrBlocked},
		{"name resolving to SIIT loopback", "http://siit.test:" + itoa(port) + "/", safehttp.ErrBlocked},
		{"name resolving to Teredo", "http://teredo.test/", safehttp.ErrBlocked},
		{"name resolving to the 6to4 relay", "http://relay.test/", safehttp.ErrBlocked},
		{"name resolving to site-local", "http://sitelocal.test/", safehttp.ErrBlocked},
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

// TestIsPublic walks the IANA IPv4 and IPv6 Special-Purpose Address
// Registries (and multicast, and the IPv6 space outside 2000::/3): the
// first and last address of every block, then the IPv4-embedding IPv6 forms,
// then public controls on either side of the blocks.
// refusedBlocks are the address blocks IsPublic refuses, each by its
// first and last address.
var refusedBlocks = []struct{ block, first, last string }{
	// IPv4 Special-Purpose Address Registry.
	{"0.0.0.0/8 this network", "0.0.0.0", "0.255.255.255"},
	{"10.0.0.0/8 private", "10.0.0.0", "10.255.255.255"},
	{"100.64.0.0/10 shared (CGN)", "100.64.0.0", "100.127.255.255"},
	{"127.0.0.0/8 loopback", "127.0.0.0", "127.255.255.255"},
	{"169.254.0.0/16 link local", "169.254.0.0", "169.254.255.255"},
	{"172.16.0.0/12 private", "172.16.0.0", "172.31.255.255"},
	{"192.0.0.0/24 IETF protocol assignments", "192.0.0.0", "192.0.0.255"},
	{"192.0.0.0/29 DS-Lite", "192.0.0.0", "192.0.0.7"},
	{"192.0.0.8/32 dummy", "192.0.0.8", "192.0.0.8"},
	{"192.0.0.9/32 PCP anycast", "192.0.0.9", "192.0.0.9"},
	{"192.0.0.10/32 TURN anycast", "192.0.0.10", "192.0.0.10"},
	{"192.0.0.170/32 NAT64 discovery", "192.0.0.170", "192.0.0.170"},
	{"192.0.0.171/32 NAT64 discovery", "192.0.0.171", "192.0.0.171"},
	{"192.0.2.0/24 TEST-NET-1", "192.0.2.0", "192.0.2.255"},
	{"192.31.196.0/24 AS112-v4", "192.31.196.0", "192.31.196.255"},
	{"192.52.193.0/24 AMT", "192.52.193.0", "192.52.193.255"},
	{"192.88.99.0/24 6to4 relay anycast", "192.88.99.0", "192.88.99.255"},
	{"192.168.0.0/16 private", "192.168.0.0", "192.168.255.255"},
	{"192.175.48.0/24 AS112 direct delegation", "192.175.48.0", "192.175.48.255"},
	{"198.18.0.0/15 benchmarking", "198.18.0.0", "198.19.255.255"},
	{"198.51.100.0/24 TEST-NET-2", "198.51.100.0", "198.51.100.255"},
	{"203.0.113.0/24 TEST-NET-3", "203.0.113.0", "203.0.113.255"},
	{"224.0.0.0/4 multicast", "224.0.0.0", "239.255.255.255"},
	{"240.0.0.0/4 reserved", "240.0.0.0", "255.255.255.254"},
	{"255.255.255.255/32 broadcast", "255.255.255.255", "255.255.255.255"},

	// IPv6 Special-Purpose Address Registry.
	{"::/128 unspecified", "::", "::"},
	{"::1/128 loopback", "::1", "::1"},
	{"::ffff:0:0/96 mapped private", "::ffff:10.0.0.0", "::ffff:10.255.255.255"},
	{"::ffff:0:0/96 mapped metadata", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe"},
	{"64:ff9b::/96 NAT64", "64:ff9b::", "64:ff9b::ffff:ffff"},
	{"64:ff9b:1::/48 local NAT64", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"},
	{"100::/64 discard", "100::", "100::ffff:ffff:ffff:ffff"},
	{"100:0:0:1::/64 dummy", "100:0:0:1::", "100::1:ffff:ffff:ffff:ffff"},
	{"2001::/23 IETF protocol assignments", "2001::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2001::/32 Teredo", "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2001:1::1/128 PCP anycast", "2001:1::1", "2001:1::1"},
	{"2001:1::2/128 TURN anycast", "2001:1::2", "2001:1::2"},
	{"2001:1::3/128 DNS-SD SRP anycast", "2001:1::3", "2001:1::3"},
	{"2001:2::/48 benchmarking", "2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff"},
	{"2001:3::/32 AMT", "2001:3::", "2001:3:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2001:4:112::/48 AS112-v6", "2001:4:112::", "2001:4:112:ffff:ffff:ffff:ffff:ffff"},
	{"2001:10::/28 ORCHID", "2001:10::", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2001:20::/28 ORCHIDv2", "2001:20::", "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2001:30::/28 drone remote ID", "2001:30::", "2001:3f:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2001:db8::/32 documentation", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2002::/16 6to4", "2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"2620:4f:8000::/48 AS112 direct delegation", "2620:4f:8000::", "2620:4f:8000:ffff:ffff:ffff:ffff:ffff"},
	{"3fff::/20 documentation", "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"5f00::/16 SRv6 SIDs", "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"fc00::/7 unique local", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"fe80::/10 link local", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},

	// Outside the registries but not global unicast either.
	{"fec0::/10 site local", "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"ff00::/8 multicast", "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"::/8 reserved (below 2000::/3)", "::2", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"4000::/2 reserved (above 2000::/3)", "4000::", "7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	{"8000::/1 reserved (below fc00::/7)", "8000::", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},

	// IPv4 embedded in IPv6: refused whatever it embeds, public or not,
	// except the mapped form, which is the IPv4 host itself.
	{"IPv4-compatible ::/96 loopback", "::127.0.0.1", "::7f00:1"},
	{"IPv4-compatible ::/96 metadata", "::169.254.169.254", "::a9fe:a9fe"},
	{"IPv4-compatible ::/96 public", "::8.8.8.8", "::1.1.1.1"},
	{"SIIT ::ffff:0:0:0/96 loopback", "::ffff:0:7f00:1", "::ffff:0:127.255.255.255"},
	{"SIIT ::ffff:0:0:0/96 public", "::ffff:0:8.8.8.8", "::ffff:0:808:808"},
	{"NAT64 loopback", "64:ff9b::127.0.0.1", "64:ff9b::7f00:1"},
	{"NAT64 public", "64:ff9b::8.8.8.8", "64:ff9b::808:808"},
	{"local NAT64 private", "64:ff9b:1:a00::1", "64:ff9b:1::10.0.0.1"},
	{"6to4 loopback", "2002:7f00:1::", "2002:7f00:1::1"},
	{"6to4 metadata", "2002:a9fe:a9fe::", "2002:a9fe:a9fe:ffff::1"},
	{"6to4 public", "2002:808:808::", "2002:808:808::1"},
	{"Teredo server and client", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:c000:ab:0:80ff:80ff:fffe"},
	{"mapped loopback", "::ffff:127.0.0.1", "::ffff:7f00:1"},
	{"mapped unspecified", "::ffff:0.0.0.0", "::ffff:0:0"},
	{"mapped broadcast", "::ffff:255.255.255.255", "::ffff:ffff:ffff"},
	{"mapped 6to4 relay", "::ffff:192.88.99.1", "::ffff:c058:6301"},

	// Scoped addresses.
	{"zoned link local", "fe80::1%eth0", "fe80::1%1"},
	{"zoned global", "2606:4700::1111%eth0", "2a00:1450:4001::1%2"},
}

func TestIsPublic(t *testing.T) {
	for _, tc := range refusedBlocks {
		t.Run(tc.block, func(t *testing.T) {
			for _, s := range []string{tc.first, tc.last} {
				require.False(t, safehttp.IsPublic(netip.MustParseAddr(s)), s)
			}
		})
	}
	require.False(t, safehttp.IsPublic(netip.Addr{}), "the zero Addr")
	// Special-purpose addresses in IPv6 and IPv4 forms that an earlier check let pass.
	for _, s := range []string{"::127.0.0.1", "::a9fe:a9fe", "::ffff:0:7f00:1", "fec0::1", "2001::1", "192.88.99.1"} {
		require.False(t, safehttp.IsPublic(netip.MustParseAddr(s)), s)
	}
}

// The neighbours of the refused blocks, and global addresses, are public.
func TestIsPublicNeighbours(t *testing.T) {
	for _, s := range []string{
		// Neighbours of the IPv4 blocks.
		"1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
		"128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "191.255.255.255",
		"192.0.1.0", "192.0.3.0", "192.31.195.255", "192.31.197.0", "192.52.192.255", "192.52.194.0",
		"192.88.98.255", "192.88.100.0", "192.167.255.255", "192.169.0.0", "192.175.47.255", "192.175.49.0",
		"198.17.255.255", "198.20.0.0", "198.51.99.255", "198.51.101.0", "203.0.112.255", "203.0.114.0",
		"223.255.255.255", "8.8.8.8", "1.1.1.1",
		// The mapped form of a public address is that address.
		"::ffff:8.8.8.8", "::ffff:1.1.1.1",
		// Global unicast IPv6 next to the blocks.
		"2000::", "2001:200::", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::", "2001:4860:4860::8888",
		"2003::", "2001:200::1", "2606:4700::1111",
		"2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", "2620:4f:8001::", "2a00:1450:4001::1",
		"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::",
	} {
		require.True(t, safehttp.IsPublic(netip.MustParseAddr(s)), s)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestWebhookRedirectsStayHTTPS: when webhooks must be https (private URLs
// not allowed), a redirect to plain http is not followed, so neither the
// signed body nor its headers travel in clear; fetches may still follow one.
func TestWebhookRedirectsStayHTTPS(t *testing.T) {
	var sinkHits atomic.Int32
	sink := serveOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		sinkHits.Add(1)
		_, _ = w.Write([]byte("sink"))
	}))
	var received atomic.Value
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			code, _ := strconv.Atoi(r.URL.Query().Get("code"))
			http.Redirect(w, r, to, code)
			return
		}
		b, _ := io.ReadAll(r.Body)
		received.Store(string(b))
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(tlsSrv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(tlsSrv.Certificate())
	// Loopback plays the public internet through an operator exception, so
	// https stays required.
	strict := safehttp.New(safehttp.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: roots})
	require.True(t, strict.RequireHTTPS())
	lax := safehttp.New(safehttp.Config{AllowPrivate: true, RootCAs: roots})
	redirect := func(code int, to string) string {
		return tlsSrv.URL + "/hook?code=" + itoa(code) + "&to=" + url.QueryEscape(to)
	}

	for _, tc := range []struct {
		name     string
		c        *safehttp.Client
		url      string
		want     error
		wantSink bool
	}{
		{"307 to http", strict, redirect(307, sink.URL+"/"), safehttp.ErrInsecureRedirect, false},
		{"308 to http", strict, redirect(308, sink.URL+"/"), safehttp.ErrInsecureRedirect, false},
		{"302 to http", strict, redirect(302, sink.URL+"/"), safehttp.ErrInsecureRedirect, false},
		{"307 to https, then 302 to http", strict, redirect(307, redirect(302, sink.URL+"/")), safehttp.ErrInsecureRedirect, false},
		{"plain http webhook", strict, sink.URL + "/", safehttp.ErrScheme, false},
		{"307 to https", strict, redirect(307, tlsSrv.URL+"/final"), nil, false},
		{"private URLs allowed: http is too", lax, redirect(307, sink.URL+"/"), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sinkHits.Load()
			received.Store("")
			code, err := tc.c.Post(context.Background(), tc.url, map[string][]string{"Webhook-Signature": {"v1,x"}}, []byte(`{"n":1}`))
			require.Equal(t, tc.wantSink, sinkHits.Load() > before, "reached the http server")
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code)
			if !tc.wantSink {
				require.Equal(t, `{"n":1}`, received.Load(), "a 307 resends the body")
			}
		})
	}

	// A fetch may be redirected to http: an http media URL is accepted in
	// the first place, and a GET carries nothing of the customer's.
	resp, err := strict.Get(context.Background(), redirect(302, sink.URL+"/"))
	require.NoError(t, err)
	require.Equal(t, "sink", string(resp.Body))
}

// FuzzIsPublicEmbeddedIPv4: whatever IPv4 address an IPv6 form embeds, the
// mapped form is judged as the IPv4 address and every other embedding form
// is refused; nothing outside IPv4 and 2000::/3 is public.
func FuzzIsPublicEmbeddedIPv4(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "169.254.169.254", "8.8.8.8", "192.88.99.1", "10.0.0.1", "0.0.0.0"} {
		f.Add(netip.MustParseAddr(s).AsSlice(), make([]byte, 16))
	}
	f.Add([]byte{1, 1, 1, 1}, netip.MustParseAddr("fec0::1").AsSlice())
	f.Fuzz(func(t *testing.T, v4b, v6b []byte) {
		if len(v4b) != 4 || len(v6b) != 16 {
			t.Skip()
		}
		v4 := netip.AddrFrom4([4]byte(v4b))
		b := v4.As4()
		embed := func(prefix []byte, at int) netip.Addr {
			var a [16]byte
			copy(a[:], prefix)
			copy(a[at:], b[:])
			return netip.AddrFrom16(a)
		}
		mapped := netip.AddrFrom16(v4.As16())
		require.Equal(t, safehttp.IsPublic(v4), safehttp.IsPublic(mapped), "mapped %s", mapped)
		for _, a := range []netip.Addr{
			embed(nil, 12), // IPv4-compatible ::a.b.c.d
			embed([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 12), // SIIT ::ffff:0:a.b.c.d
			embed([]byte{0, 0x64, 0xff, 0x9b}, 12),                // NAT64 64:ff9b::a.b.c.d
			embed([]byte{0, 0x64, 0xff, 0x9b, 0, 1}, 6),           // local NAT64, /48
			embed([]byte{0x20, 0x02}, 2),                          // 6to4 2002:a.b.c.d::
			embed([]byte{0x20, 0x01, 0, 0}, 4),                    // Teredo server
		} {
			require.False(t, safehttp.IsPublic(a), "%s embeds %s", a, v4)
		}
		a := netip.AddrFrom16([16]byte(v6b))
		if safehttp.IsPublic(a) && !a.Is4In6() {
			require.True(t, netip.MustParsePrefix("2000::/3").Contains(a), a)
		}
	})
}
