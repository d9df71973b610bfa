// Package console serves the review console (console/README.md): a single-page
// application built from console/src by `make console` into console/dist.
// The built files are committed and embedded, so the binary serves them
// with no files beside it and nothing from a CDN; CI rebuilds them and
// fails when the committed ones are stale (`make verify-console`).
//
// The application reaches the server only through the public API, with
// the API key the user pastes (kept in sessionStorage, sent as the bearer
// token), so this package knows nothing of the rest of the server.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed dist
var dist embed.FS

// Prefix is where the console is mounted.
const Prefix = "/console/"

// ContentSecurityPolicy allows the page its own script, style and API and
// nothing else: no inline script or style, no eval, no other origin, no
// framing, no form posts, and (Trusted Types with no policy) no HTML
// parsed from strings, so text from the API can only ever become text.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; manifest-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

type asset struct {
	body, gzipped []byte
	contentType   string
	etag          string
}

var assets = sync.OnceValues(loadAssets)

// loadAssets reads the embedded files once and compresses them once: the
// bundle is served gzipped to every browser that accepts it (all do), which
// is what the first-load budget of the bench counts.
func loadAssets() (map[string]*asset, error) {
	out := map[string]*asset{}
	err := fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := dist.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := &asset{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		a.contentType = mime.TypeByExtension(path.Ext(p))
		if a.contentType == "" {
			a.contentType = "application/octet-stream"
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		if buf.Len() < len(body) {
			a.gzipped = buf.Bytes()
		}
		out[strings.TrimPrefix(p, "dist/")] = a
		return nil
	})
	return out, err
}

// Handler serves the console under Prefix: the application at Prefix
// itself, its files below it, a redirect from the prefix without its
// slash, and 404 for anything else. Every answer carries the security
// headers, errors included.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if name == "" {
		name = "index.html"
	}
	all, err := assets()
	if err != nil {
		http.Error(w, "console assets unreadable", http.StatusInternalServerError)
		return
	}
	a, ok := all[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	// The file names do not change between builds, so the browser asks
	// again each time and gets a 304 while the build is the same.
	h.Set("Cache-Control", "no-cache")
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gzipped != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = a.gzipped
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reads Accept-Encoding as RFC 9110 does, enough to honour
// "gzip;q=0" (refused) as well as "gzip" and "*".
func acceptsGzip(header string) bool {
	ok := false
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		refused := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		if refused == "q=0" || refused == "q=0.0" || refused == "q=0.00" || refused == "q=0.000" {
			if coding == "gzip" {
				return false
			}
			continue
		}
		ok = true
	}
	return ok
}
