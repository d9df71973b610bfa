package main

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The soft memory limit follows the large requests being served: the
// memory in use when the first began, 64 MiB, 8 x their bodies; back to
// the process's own limit when the last ends; small requests leave it.
func TestMemoryPromise(t *testing.T) {
	t.Parallel()
	const base = 100 << 20
	cases := []struct {
		name    string
		initial int64
		bodies  []int64 // requests begun in order, ended in reverse
		want    []int64 // the limit after each begins
	}{
		{"one request", math.MaxInt64, []int64{6 << 20}, []int64{base + 64<<20 + 48<<20}},
		{"two requests", math.MaxInt64, []int64{6 << 20, 2 << 20}, []int64{base + 64<<20 + 48<<20, base + 64<<20 + 64<<20}},
		{"under the process's own limit", 150 << 20, []int64{6 << 20}, []int64{150 << 20}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.initial
			inUse := int64(base)
			p := &memoryPromise{initial: tc.initial, inUse: func() int64 { return inUse },
				setLimit: func(n int64) int64 { old := limit; limit = n; return old }}
			var releases []func()
			for i, b := range tc.bodies {
				releases = append(releases, p.reserve(b))
				require.Equal(t, tc.want[i], limit, "after request %d began", i)
				inUse += 500 << 20 // the base is taken when the first began only
			}
			for i := len(releases) - 1; i >= 0; i-- {
				releases[i]()
			}
			require.Equal(t, tc.initial, limit, "after the last ended")
		})
	}
	t.Run("small requests leave the limit", func(t *testing.T) {
		var set []int64
		p := &memoryPromise{initial: math.MaxInt64, inUse: func() int64 { return base },
			setLimit: func(n int64) int64 { set = append(set, n); return 0 }}
		var during int64
		h := p.wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { during = int64(len(set)) }))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader("{}")))
		require.Empty(t, set)
		big := strings.Repeat(" ", promiseMinBody)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(big)))
		require.Equal(t, int64(1), during, "the limit is set while the large request is served")
		require.Equal(t, []int64{base + 64<<20 + 8*promiseMinBody, math.MaxInt64}, set)
	})
}

// A body of unknown length (chunked, or HTTP/2 without content-length)
// counts as it is read: nothing while it is small, then every byte read
// (in steps of promiseMinBody, the rest at its end), until the request
// ends. Before, such a body was not counted at all.
func TestMemoryPromiseUnknownLength(t *testing.T) {
	t.Parallel()
	const base = 100 << 20
	cases := []struct {
		name  string
		body  int64
		reads []int64 // bytes read in turn, and the limit after each
		want  []int64
	}{
		{"small", 1000, []int64{1000, 0}, []int64{math.MaxInt64, math.MaxInt64}},
		{"large, read in steps", 5<<20 + 512<<10,
			[]int64{512 << 10, 512 << 10, 3 << 20, 1 << 20, 512 << 10, 0},
			[]int64{math.MaxInt64, base + 64<<20 + 8<<20, base + 64<<20 + 8<<20 + 24<<20,
				base + 64<<20 + 8<<20 + 24<<20 + 8<<20, base + 64<<20 + 8<<20 + 24<<20 + 8<<20, base + 64<<20 + 8*(5<<20+512<<10)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit := int64(math.MaxInt64)
			p := &memoryPromise{initial: math.MaxInt64, inUse: func() int64 { return base },
				setLimit: func(n int64) int64 { old := limit; limit = n; return old }}
			h := p.wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				for i, n := range tc.reads {
					got, err := io.ReadFull(r.Body, make([]byte, n))
					require.Equal(t, int(n), got)
					if n == 0 {
						// The end: a read past it reports EOF.
						_, err = r.Body.Read(make([]byte, 1))
						require.ErrorIs(t, err, io.EOF)
					} else {
						require.NoError(t, err)
					}
					require.Equal(t, tc.want[i], limit, "after read %d", i)
				}
			}))
			req := httptest.NewRequest(http.MethodPost, "/v1/jobs", io.LimitReader(zeros{}, tc.body))
			req.ContentLength = -1 // as a chunked body arrives
			h.ServeHTTP(httptest.NewRecorder(), req)
			require.Equal(t, int64(math.MaxInt64), limit, "after the request ended")
		})
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}
