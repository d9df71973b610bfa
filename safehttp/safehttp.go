// Package safehttp is the HTTP client for every URL a customer gives us
// (imageUrl, videoUrl, audioUrl, webhooks): http(s) only, and by default never
// to loopback, private, link-local, metadata or otherwise internal addresses
// (DESIGN §5). Addresses are checked after DNS resolution, on every redirect
// and at connect time — the dialer connects only to the address it checked —
// so a DNS name that resolves, or later re-resolves, to an internal address
// is refused (DNS rebinding). Bodies and time are bounded.
package safehttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
}

// Client fetches customer URLs under Config's rules. Safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
}

// Errors callers branch on (errors.Is).
var (
	ErrScheme       = errors.New("only http and https URLs are allowed")
	ErrBlocked      = errors.New("the URL resolves to an address that is not allowed (loopback, private, link-local or reserved)")
	ErrTooLarge     = errors.New("the response is larger than allowed")
	ErrTooManyHops  = errors.New("too many redirects")
	ErrUnresolvable = errors.New("the host name does not resolve")
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
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	c.http = &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > cfg.MaxRedirects {
				return ErrTooManyHops
			}
			return c.CheckURL(req.URL.String())
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

// RequireHTTPS reports whether plain http is refused (webhooks: DESIGN §6).
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
// read (bounded) and discarded so the connection can be reused.
func (c *Client) Post(ctx context.Context, raw string, header map[string][]string, body []byte) (int, error) {
	if err := c.CheckURL(raw); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, unwrapURLError(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

func unwrapURLError(err error) error {
	for _, target := range []error{ErrBlocked, ErrScheme, ErrTooManyHops, ErrUnresolvable} {
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

var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 can reach internal IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"), // documentation
	netip.MustParsePrefix("2002::/16"),     // 6to4 embeds IPv4
	netip.MustParsePrefix("100::/64"),      // discard
}

// IsPublic reports whether a is a globally routable unicast address: not
// loopback, private (RFC 1918, ULA — which covers cloud metadata such as
// fd00:ec2::254), link-local (169.254.169.254 metadata), multicast,
// unspecified or reserved.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
