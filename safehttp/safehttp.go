// Package safehttp is the HTTP client for every URL a customer gives us
// (imageUrl, videoUrl, audioUrl, webhooks): http(s) only, and by default never
// to loopback, private, link-local, metadata or otherwise internal addresses
// (docs/api.md#url-fetching). Addresses are checked after DNS resolution, on every redirect
// and at connect time — the dialer connects only to the address it checked —
// so a DNS name that resolves, or later re-resolves, to an internal address
// is refused (DNS rebinding). Bodies and time are bounded.
package safehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/contenteval/contenteval/tracing"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Config bounds what a Client may reach and read.
type Config struct {
	// AllowPrivate lets requests reach internal addresses and use plain http
	// for webhooks (CONTENTEVAL_ALLOW_PRIVATE_URLS; local testing only).
	AllowPrivate bool
	// Allow lists internal prefixes that are reachable even so (an operator's
	// own media host).
	Allow []netip.Prefix
	// Timeout bounds a whole request including the body (default 30s).
	Timeout time.Duration
	// MaxBytes bounds a response body (default 20 MiB).
	MaxBytes int64
	// MaxRedirects bounds redirects followed (default 5).
	MaxRedirects int
	// LookupHost resolves names; tests replace it. Default: net.DefaultResolver.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// RootCAs verifies https servers (default: the system's roots); tests
	// trust their httptest servers with it.
	RootCAs *x509.CertPool
}

// Client fetches customer URLs under Config's rules. Safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
	// post sends webhooks: the same transport, but redirects must stay https
	// when the webhook had to be (see Post).
	post *http.Client
}

// Errors callers branch on (errors.Is).
var (
	ErrScheme       = errors.New("only http and https URLs are allowed")
	ErrBlocked      = errors.New("the URL resolves to an address that is not allowed (loopback, private, link-local or another special-purpose address)")
	ErrTooLarge     = errors.New("the response is larger than allowed")
	ErrTooManyHops  = errors.New("too many redirects")
	ErrUnresolvable = errors.New("the host name does not resolve")
	// ErrInsecureRedirect is a webhook redirected from https to plain http
	// while https is required.
	ErrInsecureRedirect = errors.New("the webhook redirected to a URL that is not https")
)

// StatusError is a non-2xx response.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("the server answered HTTP %d", e.Code) }

// New returns a Client.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 20 << 20
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = 5
	}
	if cfg.LookupHost == nil {
		cfg.LookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	c := &Client{cfg: cfg}
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		// Defence in depth: whatever address a connection ends up on is
		// checked again by the kernel-level hook.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !c.addrAllowed(ap.Addr()) {
				return ErrBlocked
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy: nil, // an environment proxy would bypass the address checks
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			addrs, err := c.resolve(ctx, host)
			if err != nil {
				return nil, err
			}
			var lastErr error
			for _, a := range addrs {
				conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
				if err == nil {
					return conn, nil
				}
				lastErr = err
			}
			return nil, lastErr
		},
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	checkRedirect := func(req *http.Request, via []*http.Request) error {
		if len(via) > cfg.MaxRedirects {
			return ErrTooManyHops
		}
		return c.CheckURL(req.URL.String())
	}
	// Spans wrap the guarded transport: the dial checks stay on every hop.
	traced := tracing.WrapTransport(transport)
	c.http = &http.Client{Transport: traced, Timeout: cfg.Timeout, CheckRedirect: checkRedirect}
	c.post = &http.Client{
		Transport: traced,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// A redirected request carries the signed payload (307, 308)
			// and, whatever the status, the signature and the customer's
			// extra headers: over plain http they would be readable and
			// replayable on the way.
			if c.RequireHTTPS() && req.URL.Scheme != "https" {
				return ErrInsecureRedirect
			}
			return checkRedirect(req, via)
		},
	}
	return c
}

// resolve returns the allowed addresses of host, or ErrBlocked when it has
// only disallowed ones.
func (c *Client) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if !c.addrAllowed(a) {
			return nil, ErrBlocked
		}
		return []netip.Addr{a}, nil
	}
	addrs, err := c.cfg.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return nil, ErrUnresolvable
	}
	var ok []netip.Addr
	for _, a := range addrs {
		if c.addrAllowed(a) {
			ok = append(ok, a.Unmap())
		}
	}
	if len(ok) == 0 {
		return nil, ErrBlocked
	}
	return ok, nil
}

// CheckURL validates a URL's form before any request: absolute http(s), a
// host, no credentials, and no literal internal address. Names are checked
// when they are resolved.
func (c *Client) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: not an absolute URL", ErrScheme)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return ErrScheme
	}
	if u.User != nil {
		return fmt.Errorf("%w: URLs must not carry credentials", ErrScheme)
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !c.addrAllowed(a) {
		return ErrBlocked
	}
	if strings.EqualFold(u.Hostname(), "localhost") || strings.HasSuffix(strings.ToLower(u.Hostname()), ".localhost") {
		if !c.cfg.AllowPrivate {
			return ErrBlocked
		}
	}
	return nil
}

// RequireHTTPS reports whether plain http is refused (webhooks: docs/api.md#webhooks).
func (c *Client) RequireHTTPS() bool { return !c.cfg.AllowPrivate }

// Response is a fetched body.
type Response struct {
	Body        []byte
	ContentType string
	FinalURL    string
}

// Get fetches raw and returns its body, at most MaxBytes long.
func (c *Client) Get(ctx context.Context, raw string) (*Response, error) {
	if err := c.CheckURL(raw); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Code: resp.StatusCode}
	}
	if resp.ContentLength > c.cfg.MaxBytes {
		return nil, ErrTooLarge
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBytes+1))
	if err != nil {
		return nil, unwrapURLError(err)
	}
	if int64(len(body)) > c.cfg.MaxBytes {
		return nil, ErrTooLarge
	}
	return &Response{Body: body, ContentType: resp.Header.Get("Content-Type"), FinalURL: resp.Request.URL.String()}, nil
}

// Post sends body to raw and returns the status code; the response body is
// read (bounded) and discarded so the connection can be reused. When
// RequireHTTPS, raw and every redirect must be https (ErrScheme,
// ErrInsecureRedirect). Fetches (Get) have no such rule: an http media URL is
// accepted to begin with and they send nothing of the customer's.
func (c *Client) Post(ctx context.Context, raw string, header map[string][]string, body []byte) (int, error) {
	if err := c.CheckURL(raw); err != nil {
		return 0, err
	}
	if c.RequireHTTPS() && !strings.HasPrefix(strings.ToLower(raw), "https://") {
		return 0, fmt.Errorf("%w: webhooks must be https", ErrScheme)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.post.Do(req)
	if err != nil {
		return 0, unwrapURLError(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

func unwrapURLError(err error) error {
	for _, target := range []error{ErrBlocked, ErrScheme, ErrTooManyHops, ErrUnresolvable, ErrInsecureRedirect} {
		if errors.Is(err, target) {
			return target
		}
	}
	return err
}

// addrAllowed is the address policy.
func (c *Client) addrAllowed(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range c.cfg.Allow {
		if p.Contains(a) {
			return true
		}
	}
	if c.cfg.AllowPrivate {
		return a.IsValid()
	}
	return IsPublic(a)
}

// IsPublic reports whether a is an ordinary globally routable unicast
// address: none of the blocks of the IANA IPv4 and IPv6 Special-Purpose
// Address Registries, nor multicast, nor (IPv6) outside 2000::/3 global
// unicast. Blocks the registries mark "globally reachable" (AS112, AMT,
// anycast PCP/TURN, ORCHIDv2, the NAT64 well-known prefix, ...) are refused
// too: no customer's media or webhook is served from them, and the NAT64
// prefix reaches whatever IPv4 address it embeds.
//
// An IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 host itself — Go
// dials it over IPv4 — so the embedded address is what is judged. Every
// other IPv6 form that embeds an IPv4 address (IPv4-compatible ::a.b.c.d,
// SIIT ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
// 2002::/16, Teredo 2001::/32) is refused whatever it embeds: the gateway
// that unwraps it decides where the packet goes, and it may well be an
// internal IPv4 address.
func IsPublic(a netip.Addr) bool {
	// A zone only scopes link-local and other non-global addresses.
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.Is4() {
		for _, p := range specialIPv4 {
			if p.Contains(a) {
				return false
			}
		}
		return true
	}
	if !globalUnicastIPv6.Contains(a) {
		return false
	}
	for _, p := range specialIPv6 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// specialIPv4 is every entry of the IANA IPv4 Special-Purpose Address
// Registry (https://www.iana.org/assignments/iana-ipv4-special-registry),
// plus multicast. Entries inside a larger one are listed anyway so the list
// reads against the registry.
var specialIPv4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network" (RFC 791)
	netip.MustParsePrefix("10.0.0.0/8"),         // private use (RFC 1918)
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space, carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("169.254.0.0/16"),     // link local: cloud metadata 169.254.169.254
	netip.MustParsePrefix("172.16.0.0/12"),      // private use
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments (RFC 6890)
	netip.MustParsePrefix("192.0.0.0/29"),       // IPv4 service continuity, DS-Lite (RFC 7335)
	netip.MustParsePrefix("192.0.0.8/32"),       // IPv4 dummy address (RFC 7600)
	netip.MustParsePrefix("192.0.0.9/32"),       // PCP anycast (RFC 7723)
	netip.MustParsePrefix("192.0.0.10/32"),      // TURN anycast (RFC 8155)
	netip.MustParsePrefix("192.0.0.170/31"),     // NAT64/DNS64 discovery, .170 and .171 (RFC 7050)
	netip.MustParsePrefix("192.0.2.0/24"),       // documentation, TEST-NET-1
	netip.MustParsePrefix("192.31.196.0/24"),    // AS112-v4 (RFC 7535)
	netip.MustParsePrefix("192.52.193.0/24"),    // AMT (RFC 7450)
	netip.MustParsePrefix("192.88.99.0/24"),     // deprecated 6to4 relay anycast (RFC 7526)
	netip.MustParsePrefix("192.168.0.0/16"),     // private use
	netip.MustParsePrefix("192.175.48.0/24"),    // direct delegation AS112 service (RFC 7534)
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking (RFC 2544)
	netip.MustParsePrefix("198.51.100.0/24"),    // documentation, TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),     // documentation, TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast (its own registry)
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved (RFC 1112)
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast (inside 240/4)
}

// globalUnicastIPv6 is the only IPv6 space IANA allocates for global
// unicast; the rest is reserved by the IETF or has a special use (loopback,
// unspecified, mapped, compatible, SIIT, NAT64 64:ff9b::/96 and
// 64:ff9b:1::/48, discard 100::/64, SRv6 5f00::/16, unique local fc00::/7,
// link local fe80::/10, site local fec0::/10, multicast ff00::/8).
var globalUnicastIPv6 = netip.MustParsePrefix("2000::/3")

// specialIPv6 is every entry of the IANA IPv6 Special-Purpose Address
// Registry (https://www.iana.org/assignments/iana-ipv6-special-registry)
// that lies inside 2000::/3.
var specialIPv6 = []netip.Prefix{
	netip.MustParsePrefix("2001::/23"),         // IETF protocol assignments (RFC 2928)
	netip.MustParsePrefix("2001::/32"),         // Teredo: embeds an obfuscated IPv4 server and client (RFC 4380)
	netip.MustParsePrefix("2001:1::1/128"),     // PCP anycast (RFC 7723)
	netip.MustParsePrefix("2001:1::2/128"),     // TURN anycast (RFC 8155)
	netip.MustParsePrefix("2001:1::3/128"),     // DNS-SD SRP anycast (RFC 9665)
	netip.MustParsePrefix("2001:2::/48"),       // benchmarking (RFC 5180)
	netip.MustParsePrefix("2001:3::/32"),       // AMT (RFC 7450)
	netip.MustParsePrefix("2001:4:112::/48"),   // AS112-v6 (RFC 7535)
	netip.MustParsePrefix("2001:10::/28"),      // deprecated ORCHID (RFC 4843)
	netip.MustParsePrefix("2001:20::/28"),      // ORCHIDv2 (RFC 7343)
	netip.MustParsePrefix("2001:30::/28"),      // drone remote ID entity tags (RFC 9374)
	netip.MustParsePrefix("2001:db8::/32"),     // documentation (RFC 3849)
	netip.MustParsePrefix("2002::/16"),         // 6to4: embeds an IPv4 address (RFC 3056)
	netip.MustParsePrefix("2620:4f:8000::/48"), // direct delegation AS112 service (RFC 7534)
	netip.MustParsePrefix("3fff::/20"),         // documentation (RFC 9637)
}
