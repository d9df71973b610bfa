package handlers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/contenteval/contenteval/gen"
	"github.com/stretchr/testify/require"
)

func TestScanJSON(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name      string
		body      string
		maxValues int // 0: 1000
		reason    string
		path      string // fieldPath with no schema
		syntax    bool
	}{
		{name: "job", body: `{"policyId":"p","contentData":[{"text":"héllo ☃","metadata":{"k":"v"}}],"threshold":0.5,"waitForCompletion":true,"x":null}`},
		{name: "escapes", body: `{"a\"b":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\u0001", "c": [ -1.5e+3 , false ] }`},
		{name: "empty containers", body: ` { "a" : { } , "b" : [ ] , "c" : [ [ ] , { } ] } `},
		{name: "top-level scalar", body: `"x"`},
		{name: "lone surrogate escape is not NUL", body: `["\ud800"]`},
		{name: "depth 64", body: nest(64)},

		{name: "depth 65", body: nest(65), reason: reasonTooDeep, path: strings.Repeat("[0]", 64)},
		{name: "deep in an object", body: `{"x":` + nest(64) + `}`, reason: reasonTooDeep, path: "x" + strings.Repeat("[0]", 63)},
		{name: "values at the limit", body: `[1,2,3]`, maxValues: 4},
		{name: "values past the limit", body: `{"ignored":[[],[],[],[]]}`, maxValues: 4, reason: reasonTooMany, path: "ignored[2]"},
		{name: "members count", body: `{"a":{"b":1,"c":2}}`, maxValues: 3, reason: reasonTooMany, path: "a.c"},

		{name: "NUL escape", body: `{"a":[{"text":"x\u0000y"}]}`, reason: reasonNUL, path: "a[0].text"},
		{name: "NUL escape after escaped quote", body: `{"a":"\"\u0000"}`, reason: reasonNUL, path: "a"},
		{name: "NUL escape upper case", body: `["ok","\U0000"]`, syntax: true, reason: reasonMalform},
		{name: "invalid UTF-8", body: "{\"a\":\"x\xffy\"}", reason: reasonUTF8, path: "a"},
		{name: "invalid UTF-8 after an escape", body: "{\"a\":\"\\n\xc3\"}", reason: reasonUTF8, path: "a"},
		{name: "truncated rune before escape", body: "{\"a\":\"\xe2\x98\\n\"}", reason: reasonUTF8, path: "a"},
		{name: "NUL in a member name", body: `{"m":{"ok":1,"a\u0000":2}}`, reason: reasonKeyNUL, path: "m"},
		{name: "invalid UTF-8 in a member name", body: "{\"\xff\":1}", reason: reasonKeyUTF8, path: "body"},

		{name: "unterminated string", body: `{"a":"x`, syntax: true, reason: reasonMalform},
		{name: "unterminated escape", body: `["\u00`, syntax: true, reason: reasonMalform},
		{name: "bad escape", body: `["\x"]`, syntax: true, reason: reasonMalform},
		{name: "missing colon", body: `{"a" 1}`, syntax: true, reason: reasonMalform},
		{name: "trailing comma", body: `[1,]`, syntax: true, reason: reasonMalform},
		{name: "trailing comma in object", body: `{"a":1,}`, syntax: true, reason: reasonMalform},
		{name: "mismatched close", body: `[}`, syntax: true, reason: reasonMalform},
		{name: "unclosed", body: `{"a":[1`, syntax: true, reason: reasonMalform},
		{name: "trailing data", body: `{} {}`, syntax: true, reason: reasonTrailing},
		{name: "close without open", body: `]`, syntax: true, reason: reasonMalform},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.maxValues
			if limit == 0 {
				limit = 1000
			}
			p := scanJSON([]byte(tc.body), limit)
			if tc.reason == "" {
				require.Nil(t, p)
				require.True(t, json.Valid([]byte(tc.body)), "the test's valid bodies are JSON")
				return
			}
			require.NotNil(t, p)
			require.Equal(t, tc.reason, p.reason)
			require.Equal(t, tc.syntax, p.syntax)
			if !tc.syntax {
				require.Equal(t, tc.path, fieldPath(p.path, nil))
			}
		})
	}
}

// TestFieldPathUsesSpecNames: a problem is named as the validator names it,
// in the spelling the spec declares, without touching free-form map keys.
func TestFieldPathUsesSpecNames(t *testing.T) {
	spec, err := gen.GetSpec()
	require.NoError(t, err)
	schema := jsonBodySchema(spec.Paths.Find("/v1/jobs").Post)
	require.NotNil(t, schema)
	for body, want := range map[string]string{
		`{"content_data":[{"text":"ok"},{"text":"\u0000"}]}`:               "contentData[1].text",
		`{"contentData":[{"metadata":{"my_key":"\u0000"}}]}`:               "contentData[0].metadata.my_key",
		`{"contentData":[{"metadata":{"a\u00e9":"\u0000"}}]}`:              "contentData[0].metadata.aé",
		`{"unknown_field":{"deep":["\u0000"]},"policyId":"p"}`:             "unknown_field.deep[0]",
		`{"contentData":[{"metadata":{"a":"b","c\u0000":"d"}}]}`:           "contentData[0].metadata",
		`{"policy_id":"p","content_data":[{"text":"x","image":"\u0000"}]}`: "contentData[0].image",
	} {
		p := scanJSON([]byte(body), 1000)
		require.NotNil(t, p, body)
		require.Equal(t, want, fieldPath(p.path, schema), body)
	}
}

// FuzzScanJSON checks the scanner against encoding/json: it never calls
// valid JSON malformed, and what it passes decodes without NUL, deeper than
// 64 levels or with more values than it counted.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,"x",{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[]`, `"\u0000"`, "\"\xff\"", `{"a\"":"\\"}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65), `[1,]`, `{"a":1}{}`, ` [ "\/" , -0.1e5 ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := scanJSON(b, 1<<30)
		valid := json.Valid(b)
		if p != nil && p.syntax && valid {
			t.Fatalf("valid JSON refused as malformed (%s at %d): %q", p.reason, p.offset, b)
		}
		if p != nil || !valid {
			return
		}
		if !utf8.Valid(b) {
			t.Fatalf("passed invalid UTF-8: %q", b)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("json.Valid but Decode: %v", err)
		}
		n, depth := walkJSON(t, v, 0)
		if depth > maxJSONDepth {
			t.Fatalf("passed depth %d: %q", depth, b)
		}
		// The scan counts every value sent; duplicate member names decode
		// to one, so it may count more, never fewer.
		if scanJSON(b, n-1) == nil {
			t.Fatalf("counted fewer than %d values: %q", n, b)
		}
	})
}

// walkJSON counts the values of a decoded document and its container depth,
// and fails on a string with NUL.
func walkJSON(t *testing.T, v any, depth int) (values, maxDepth int) {
	values, maxDepth = 1, depth
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			t.Fatalf("passed a NUL: %q", v)
		}
	case []any:
		maxDepth = depth + 1
		for _, e := range v {
			n, d := walkJSON(t, e, depth+1)
			values, maxDepth = values+n, max(maxDepth, d)
		}
	case map[string]any:
		maxDepth = depth + 1
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 {
				t.Fatalf("passed a NUL in a member name: %q", k)
			}
			n, d := walkJSON(t, e, depth+1)
			values, maxDepth = values+n, max(maxDepth, d)
		}
	}
	return values, maxDepth
}

var (
	benchJob = []byte(`{"policyId":"01a20d02-d449-71d4-98c1-6f1b2d9c0e11","contentData":[{"text":"` +
		strings.Repeat("a perfectly ordinary comment about the match last night, nothing to see. ", 20) +
		`","metadata":{"user":"u-1234","thread":"t-99","lang":"en"}}],"threshold":0.5,"waitForCompletion":true,"expedited":false}`)
	benchPlain = []byte(`{"policyId":"p","contentData":[{"text":"` +
		strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 256<<10/56) + `"}]}`)
	benchText = []byte(`{"policyId":"p","contentData":[{"text":"` +
		strings.Repeat("lorem ipsum dolor sit amet, \\\"quoted\\\" and caf\u00e9 \u2603\\n", 256<<10/40) + `"}]}`)
)

// BenchmarkScanJSON measures the scan on the hot path (POST /v1/jobs), beside
// the decode into interface{} the validator does next for scale.
func BenchmarkScanJSON(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{{"job-1.6KiB", benchJob}, {"plain-256KiB", benchPlain}, {"escaped-256KiB", benchText}} {
		b.Run(bc.name+"/scan", func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if p := scanJSON(bc.body, contentMaxValues); p != nil {
					b.Fatal(p.reason)
				}
			}
		})
		b.Run(bc.name+"/decode-any", func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(bc.body, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
