package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	index, err := dist.ReadFile("dist/index.html")
	if err != nil {
		t.Fatal(err)
	}
	app, err := dist.ReadFile("dist/app.js")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path string
		header             map[string]string
		status             int
		contentType        string
		encoding           string
		body               []byte // the decoded body, when checked
		location           string
	}{
		{name: "the application", method: "GET", path: "/console/", status: 200, contentType: "text/html; charset=utf-8", body: index},
		{name: "the index by name", method: "GET", path: "/console/index.html", status: 200, contentType: "text/html; charset=utf-8", body: index},
		{name: "the prefix without slash", method: "GET", path: "/console", status: 301, location: "/console/"},
		{name: "the script, gzipped", method: "GET", path: "/console/app.js", header: map[string]string{"Accept-Encoding": "br, gzip"},
			status: 200, contentType: "text/javascript; charset=utf-8", encoding: "gzip", body: app},
		{name: "the script, plain when gzip is refused", method: "GET", path: "/console/app.js", header: map[string]string{"Accept-Encoding": "gzip;q=0, br"},
			status: 200, contentType: "text/javascript; charset=utf-8", body: app},
		{name: "the script, plain without Accept-Encoding", method: "GET", path: "/console/app.js", status: 200, body: app},
		{name: "the stylesheet", method: "GET", path: "/console/app.css", status: 200, contentType: "text/css; charset=utf-8"},
		{name: "HEAD", method: "HEAD", path: "/console/app.js", status: 200, body: []byte{}},
		{name: "an unknown file", method: "GET", path: "/console/missing.js", status: 404},
		{name: "a directory climb", method: "GET", path: "/console/../console.go", status: 404},
		{name: "an embedded path outside dist", method: "GET", path: "/console/dist/app.js", status: 404},
		{name: "POST", method: "POST", path: "/console/", status: 405},
		{name: "outside the prefix", method: "GET", path: "/consolex", status: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://h"+tc.path, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			Handler().ServeHTTP(rec, req)
			res := rec.Result()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			// Every answer, errors included, carries the policy.
			if got := res.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
				t.Errorf("CSP %q", got)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("security headers missing: %v", res.Header)
			}
			if res.Header.Get("Set-Cookie") != "" {
				t.Errorf("a cookie was set")
			}
			if tc.contentType != "" && res.Header.Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tc.contentType)
			}
			if res.Header.Get("Content-Encoding") != tc.encoding {
				t.Errorf("Content-Encoding %q, want %q", res.Header.Get("Content-Encoding"), tc.encoding)
			}
			if tc.location != "" && res.Header.Get("Location") != tc.location {
				t.Errorf("Location %q", res.Header.Get("Location"))
			}
			if tc.body != nil {
				var r io.Reader = res.Body
				if tc.encoding == "gzip" {
					zr, err := gzip.NewReader(res.Body)
					if err != nil {
						t.Fatal(err)
					}
					r = zr
				}
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.body) {
					t.Errorf("body: %d bytes, want %d", len(got), len(tc.body))
				}
			}
		})
	}
}

func TestConditionalGet(t *testing.T) {
	get := func(h map[string]string) *http.Response {
		req := httptest.NewRequest("GET", "http://h/console/app.js", nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, req)
		return rec.Result()
	}
	first := get(nil)
	etag := first.Header.Get("ETag")
	if etag == "" || first.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, first.Header.Get("Cache-Control"))
	}
	for _, h := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		if r := get(map[string]string{"If-None-Match": h}); r.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match %s: %d, want 304", h, r.StatusCode)
		}
	}
	if r := get(map[string]string{"If-None-Match": `"other"`}); r.StatusCode != http.StatusOK {
		t.Errorf("a stale ETag: %d, want 200", r.StatusCode)
	}
}

// TestBundleNeedsNoInlineCode checks the built page against the policy it
// is served with: no inline script or style, and every file it names is
// embedded.
func TestBundleNeedsNoInlineCode(t *testing.T) {
	index, err := dist.ReadFile("dist/index.html")
	if err != nil {
		t.Fatal(err)
	}
	html := string(index)
	if regexp.MustCompile(`(?is)<script(?:[^>]*)>\s*[^<\s]`).MatchString(html) {
		t.Error("index.html has an inline script")
	}
	if regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=`).MatchString(html) {
		t.Error("index.html has inline style or an event handler attribute")
	}
	all, err := assets()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(html, -1) {
		if strings.Contains(m[1], ":") || strings.HasPrefix(m[1], "/") {
			t.Errorf("index.html loads %q from elsewhere", m[1])
			continue
		}
		if _, ok := all[m[1]]; !ok {
			t.Errorf("index.html names %q, which is not embedded", m[1])
		}
	}
	app := string(all["app.js"].body)
	for _, banned := range []string{"eval(", "new Function("} {
		if strings.Contains(app, banned) {
			t.Errorf("app.js contains %q", banned)
		}
	}
}

// TestSourcesNeverParseHTML keeps the one rule that makes the console safe
// with hostile text: text from the API is only ever rendered as text
// (Preact escapes it). No source may hand a string to the HTML parser;
// the CSP's Trusted Types would stop it at run time too.
func TestSourcesNeverParseHTML(t *testing.T) {
	banned := regexp.MustCompile(`dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser|\beval\(|new Function|srcdoc|javascript:`)
	n := 0
	err := fs.WalkDir(os.DirFS("src"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "generated/") {
			return err
		}
		if !strings.HasSuffix(p, ".ts") && !strings.HasSuffix(p, ".tsx") {
			return nil
		}
		n++
		b, err := os.ReadFile(filepath.Join("src", p))
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := banned.FindString(line); m != "" {
				t.Errorf("src/%s:%d uses %s", p, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("read %d source files; is src/ there?", n)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                    false,
		"gzip":                true,
		"GZIP":                true,
		"br, gzip":            true,
		"gzip;q=0":            false,
		"gzip; q=0, *":        false,
		"*":                   true,
		"*;q=0":               false,
		"identity":            false,
		"gzip;q=0.5":          true,
		"deflate, gzip;q=1.0": true,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

func FuzzHeaders(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "*", `"abc", W/"def"`, ",,;;=", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = acceptsGzip(s)
		if etagMatches(s, `"x"`) && !strings.Contains(s, `"x"`) && !strings.Contains(s, "*") {
			t.Fatalf("etagMatches(%q) matched without the tag", s)
		}
	})
}
