package modelbackend

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// hostileAnswer is a 4 MiB answer of tiny JSON elements where the text and
// the logprobs go, the shape that once cost hundreds of MB to decode.
func hostileAnswer(where string) []byte { return tinyElements(where, 4<<20) }

// tinyElements is an answer of about size bytes of "{}," elements.
func tinyElements(where string, size int) []byte {
	var b bytes.Buffer
	switch where {
	case "content":
		b.WriteString(`{"choices":[{"message":{"content":[`)
	case "logprobs":
		b.WriteString(`{"choices":[{"text":"x","logprobs":{"content":[`)
	}
	for b.Len() < size-16 {
		b.WriteString(`{},`)
	}
	b.WriteString(`{}]}}]}`)
	return b.Bytes()
}

// BenchmarkParseHostileAnswer measures a 4 MiB answer of tiny elements
// (refused) and the largest one of them still decoded.
func BenchmarkParseHostileAnswer(b *testing.B) {
	for _, tc := range []struct {
		where string
		size  int
	}{{"content", 4 << 20}, {"logprobs", 4 << 20}, {"content", 3*maxAnswerValues/2 - 64}, {"logprobs", 3*maxAnswerValues/2 - 64}} {
		b.Run(fmt.Sprintf("%s/%d", tc.where, tc.size), func(b *testing.B) {
			body := tinyElements(tc.where, tc.size)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = parseAnswer(body)
			}
		})
	}
}

// bytesAllocated is what fn allocates; the test that calls it is not
// parallel, so no other test allocates meanwhile.
func bytesAllocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A hostile answer of 4 MiB of tiny elements is refused before it is
// decoded, so it costs a scan, not hundreds of MB. Not parallel: the bytes
// allocated are measured process-wide.
func TestHostileAnswerIsRefusedWithBoundedMemory(t *testing.T) {
	const budget = 1 << 20
	for _, where := range []string{"content", "logprobs"} {
		t.Run(where, func(t *testing.T) {
			body := hostileAnswer(where)
			var err error
			n := bytesAllocated(func() { _, err = parseAnswer(body) })
			if err == nil {
				t.Errorf("a %d-byte answer of tiny elements was accepted", len(body))
			}
			if n > budget {
				t.Errorf("refusing it allocated %d bytes, want at most %d", n, budget)
			}
		})
	}
}

func TestAnswerShapeLimits(t *testing.T) {
	t.Parallel()
	deep := func(n int) string {
		return `{"choices":[{"text":"safe","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
	}
	many := func(n int) string {
		return `{"choices":[{"text":"safe","x":[` + strings.Repeat("1,", n) + `1]}]}`
	}
	cases := []struct {
		name, body string
		ok         bool
		text       string // the answer's text, when checked
	}{
		{"nesting within the bound", deep(maxAnswerDepth - 4), true, ""},
		{"nesting past the bound", deep(maxAnswerDepth + 1), false, ""},
		{"values within the bound", many(maxAnswerValues - 16), true, ""},
		{"values past the bound", many(maxAnswerValues + 1), false, ""},
		{"brackets and commas inside a string do not count", `{"choices":[{"text":"` + strings.Repeat(`[,{\"`, 1<<15) + `"}]}`, true, ""},
		{"content parts are read as text", `{"choices":[{"message":{"content":[{"type":"text","text":"un"},{"type":"text","text":"safe"},{"type":"image"}]}}]}`, true, "unsafe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseAnswer([]byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if tc.text != "" && a.text != tc.text {
				t.Errorf("text %q, want %q", a.text, tc.text)
			}
		})
	}
}

// BenchmarkHostileAnswerCall is one attempt (past the breakers, which
// would soon fail fast): the answer read off the wire through the size
// limit, then refused.
func BenchmarkHostileAnswerCall(b *testing.B) {
	body := hostileAnswer("content")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()
	s := Spec{Name: "b", URL: srv.URL, Model: "m", Profile: "generic"}
	zero := 0
	s.Retries = &zero
	s.applyDefaults()
	c := newCaller(&s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.attempt(context.Background(), "", "/chat/completions", []byte("{}")); err == nil {
			b.Fatal("a hostile answer was read")
		}
	}
}
