package main

import (
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// promiseMinBody is the smallest body whose request moves the soft memory
// limit: a small request's share is lost in the 64 MiB, and leaving the
// limit alone keeps the collector's pace (GOGC) for the common small job.
const promiseMinBody = 1 << 20

// promiseFixed and promisePerBodyByte are the promise of docs/api.md#limits:
// one request's peak stays under 8 x its body plus 64 MiB.
const (
	promiseFixed       = 64 << 20
	promisePerBodyByte = 8
)

// memoryPromise holds the Go runtime's soft memory limit to what the large
// requests being served are promised: the memory in use when the first of
// them began, plus 64 MiB, plus 8 x each one's body. Without it the
// collector lets the heap grow to serveGCPercent past the live heap, and
// the live heap of a few large evaluations (a body's texts, their reports
// as they are stored and answered) is itself several times their bodies:
// 8 synchronous jobs of 6.1 MiB peaked at 713 MiB over the idle process.
// The limit makes the collector run as the promise nears instead; when no
// large request is served the limit is the one the process started with.
type memoryPromise struct {
	mu       sync.Mutex
	inflight int64 // body bytes of the large requests being served
	base     int64 // memory in use when the first of them began
	initial  int64 // the limit without large requests (GOMEMLIMIT or none)
	setLimit func(int64) int64
	inUse    func() int64
}

func newMemoryPromise() *memoryPromise {
	return &memoryPromise{initial: debug.SetMemoryLimit(-1), setLimit: debug.SetMemoryLimit, inUse: runtimeInUse}
}

// wrap counts the requests to h whose body is large: a declared length
// up front, and a body of unknown length (chunked, or HTTP/2 without
// content-length) as its bytes are read.
func (p *memoryPromise) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.ContentLength >= promiseMinBody:
			defer p.reserve(r.ContentLength)()
		case r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody:
			body := &countedBody{ReadCloser: r.Body, p: p}
			defer body.release()
			r.Body = body
		}
		h.ServeHTTP(w, r)
	})
}

// countedBody reserves a body of unknown length as it is read: nothing
// below promiseMinBody, then every byte read, in steps of promiseMinBody
// (the limit moves once per MiB, not once per read) and the rest at its
// end. Its reservation ends
// with the request (release), not at EOF: what was read is still held by
// the handler.
type countedBody struct {
	io.ReadCloser
	p        *memoryPromise
	mu       sync.Mutex
	read     int64 // bytes read so far
	reserved int64 // bytes reserved with p
	releases []func()
}

func (b *countedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.read += int64(n)
	// At the end, the last step's remainder too, once the body is large.
	if b.read-b.reserved >= promiseMinBody || (err == io.EOF && b.reserved > 0 && b.read > b.reserved) {
		b.releases = append(b.releases, b.p.reserve(b.read-b.reserved))
		b.reserved = b.read
	}
	return n, err
}

// release ends the body's reservations.
func (b *countedBody) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.releases {
		r()
	}
	b.releases, b.reserved = nil, 0
}

// reserveFunc is what grpcapi.Config.Reserve takes: the reservation of a
// request message once it is read, for large ones (nil without a promise).
func (p *memoryPromise) reserveFunc() func(int64) func() {
	if p == nil {
		return nil
	}
	return func(n int64) func() {
		if n < promiseMinBody {
			return func() {}
		}
		return p.reserve(n)
	}
}

// reserve adds a request of body bytes to the limit until the returned
// function is called.
func (p *memoryPromise) reserve(body int64) (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight == 0 {
		p.base = p.inUse()
	}
	p.inflight += body
	p.apply()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.inflight -= body
		p.apply()
	}
}

func (p *memoryPromise) apply() {
	if p.inflight == 0 {
		p.setLimit(p.initial)
		return
	}
	limit := p.base + promiseFixed
	if p.inflight > (math.MaxInt64-limit)/promisePerBodyByte {
		limit = math.MaxInt64
	} else {
		limit += promisePerBodyByte * p.inflight
	}
	p.setLimit(min(limit, p.initial))
}

// runtimeInUse is the memory the process holds for what is live: the heap
// live at the last collection and what the runtime holds besides the heap
// (stacks, its own structures), without garbage, free or released pages.
func runtimeInUse() int64 {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(s)
	v := make([]int64, len(s))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s[i].Value.Uint64())
		}
	}
	return v[0] + v[1] - v[2] - v[3] - v[4] - v[5]
}
