package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// The issue-2 Go benchmarks: the same cheap GET against a bare Echo handler
// and against the full server, over real loopback connections. Compare the
// two ns/op (or req/s) lines; `make bench` runs the fuller tool in
// cmd/httpload as well. Run: go test -run '^$' -bench . ./bench/

// parallelism gives 8 client goroutines per GOMAXPROCS, 16 on two cores, as
// many as httpload's default workers.
const parallelism = 8

func BenchmarkBareEcho(b *testing.B) {
	benchGET(b, BareHandler(), nil, http.StatusOK)
}

func BenchmarkFullPathCheapGET(b *testing.B) {
	f := newFull(b)
	h := http.Header{"Authorization": {"Bearer " + f.Token}}
	benchGET(b, f.Handler, h, fullStatus(b, f))
}

// TestServersAnswer checks what the benchmarks rely on, without timing: the
// bare handler answers 200, the full path answers the cheap GET with 200 or
// (until listLabelTags is implemented) 501 {code: 12}, and 401 without a key.
func TestServersAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(BareHandler())
	defer srv.Close()
	if s, _ := get(t, srv.URL+CheapGETPath, nil); s != http.StatusOK {
		t.Fatalf("bare: status %d", s)
	}
	f := newFull(t)
	full := httptest.NewServer(f.Handler)
	defer full.Close()
	if s, _ := get(t, full.URL+CheapGETPath, nil); s != http.StatusUnauthorized {
		t.Fatalf("full path without a key: status %d, want 401", s)
	}
	fullStatus(t, f)
}

func newFull(tb testing.TB) *Full {
	tb.Helper()
	f, err := NewFull(tb.Context(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// fullStatus is the status the full path gives the cheap GET today.
func fullStatus(tb testing.TB, f *Full) int {
	tb.Helper()
	srv := httptest.NewServer(f.Handler)
	defer srv.Close()
	status, body := get(tb, srv.URL+CheapGETPath, http.Header{"Authorization": {"Bearer " + f.Token}})
	switch status {
	case http.StatusOK:
	case http.StatusNotImplemented:
		var st struct{ Code int }
		if err := json.Unmarshal(body, &st); err != nil || st.Code != 12 {
			tb.Fatalf("full path: 501 without {code: 12}: %s", body)
		}
	default:
		tb.Fatalf("full path: status %d: %s", status, body)
	}
	return status
}

func get(tb testing.TB, url string, h http.Header) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, b
}

// benchGET serves e with httptest on 127.0.0.1 and has parallel keep-alive
// clients GET the cheap path; it reports req/s and the p50/p99 latency.
func benchGET(b *testing.B, e *echo.Echo, h http.Header, status int) {
	srv := httptest.NewServer(e)
	defer srv.Close()
	conns := parallelism * 64 // more than RunParallel's goroutines on any machine we use
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := srv.URL + CheapGETPath

	var (
		mu  sync.Mutex
		all Histogram
	)
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var local Histogram
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			b.Error(err)
			return
		}
		for k, v := range h {
			req.Header[k] = v
		}
		for pb.Next() {
			t0 := time.Now()
			s, err := roundTrip(client, req)
			if err != nil || s != status {
				b.Errorf("status %d, err %v; want %d", s, err, status)
				return
			}
			local.Record(time.Since(t0))
		}
		mu.Lock()
		all.Merge(&local)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all.Quantile(0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(all.Quantile(0.99).Microseconds()), "p99-µs")
}
