package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/gen"
	"github.com/labstack/echo/v4"
	oapiruntime "github.com/oapi-codegen/runtime"
	"github.com/stretchr/testify/require"
)

// decodeJSONCases are bodies scanJSON lets through; decodeJSON must agree
// with json.Decoder (UseNumber), which the request validator used before.
var decodeJSONCases = []string{
	`{"policyId":"p","contentData":[{"text":"héllo ☃","metadata":{"k":"v"}}],"threshold":0.5,"waitForCompletion":true,"x":null}`,
	`{"a\"b":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\u0001", "c": [ -1.5e+3 , false ] }`,
	` { "a" : { } , "b" : [ ] , "c" : [ [ ] , { } ] } `,
	`"x"`, `["\ud800"]`, `["\ud83d"]`, `["\udc00\ud800x"]`, `"\u00e9\u00E9"`,
	`[0, -0, 1, 10, 1.5, -1.5e10, 1E+2, 1e-2, 123456789012345678901234567890]`,
	`{"dup":1,"dup":2}`, `{"a_b":{"c_d":[true,false,null]}}`,
	// What the decoders refuse after scanJSON: numbers and literals are
	// only delimited there, and raw control bytes are not looked for.
	`[01]`, `[1.]`, `[.5]`, `[1e]`, `[1e+]`, `[-]`, `[+1]`, `[1x]`, `[0x10]`, `[--1]`, `[1.5.5]`,
	`[tru]`, `[truee]`, `[nul]`, `[True]`, `[NaN]`, `[Infinity]`, `[x]`,
	"[\"a\tb\"]", "[\"a\nb\"]", "[\"\x01\"]", "[\"\x1f\"]", "[\"\x7f\"]",
}

func TestDecodeJSONMatchesEncodingJSON(t *testing.T) {
	for _, body := range decodeJSONCases {
		checkDecodeJSON(t, []byte(body))
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, body := range decodeJSONCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if scanJSON(b, 1000) != nil || len(bytes.TrimSpace(b)) == 0 {
			return // refused before decoding
		}
		checkDecodeJSON(t, b)
	})
}

func checkDecodeJSON(t *testing.T, b []byte) {
	t.Helper()
	var want any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	wantErr := dec.Decode(&want)
	if wantErr == nil {
		// A Decoder reads a stream of values; a body is one value (as for
		// json.Unmarshal), so anything after it is an error.
		if _, err := dec.Token(); err != io.EOF {
			wantErr = fmt.Errorf("data after the top-level value: %v", err)
		}
	}
	got, err := decodeJSON(b)
	if wantErr != nil {
		require.Error(t, err, "%q decoded to %#v; encoding/json: %v", b, got, wantErr)
		return
	}
	require.NoError(t, err, "%q", b)
	require.Equal(t, want, got, "%q", b)
}

// TestValidatedBodyIsDecodedOnce sends a job with 8 MiB of text and an
// ignored 8 MiB string through the input guard and the request validator
// and counts the bytes they allocate: the body read once, its strings
// left in place, little more. openapi3filter's own body validation copied
// such a body about twelve times (two io.ReadAll, a json.Decoder buffer,
// the decoded strings, the value encoded again for its defaults), which put
// a served request over the 8x its body plus 64 MiB of docs/api.md#limits.
func TestValidatedBodyIsDecodedOnce(t *testing.T) {
	spec, err := gen.GetSpec()
	require.NoError(t, err)
	s := &Server{cfg: Config{BodyLimit: 32 << 20}, spec: spec, ops: operations(spec)}
	s.setInputRules()
	validated := *spec
	validated.Servers = nil
	validate, err := s.validateRequest(&validated)
	require.NoError(t, err)

	text := strings.Repeat("lorem ipsum ", 64<<10/12)
	items := make([]string, 128)
	for i := range items {
		items[i] = `{"text":"` + text + `","metadata":{"i_d":"x"}}`
	}
	body := []byte(`{"policy_id":"p","content_data":[` + strings.Join(items, ",") + `],"ignored":"` + strings.Repeat("a", 8<<20) + `"}`)

	var got gen.CreateJobJSONRequestBody
	e := echo.New()
	g := e.Group("", s.resolveOperation, s.guardInput, s.acceptAliases, validate)
	g.POST("/v1/jobs", func(c echo.Context) error {
		// What the generated strict handler does.
		vb, ok := c.Request().Body.(interface{ ValidatedValue() any })
		require.True(t, ok, "the body carries the validated value")
		require.NoError(t, oapiruntime.BindJSONValue(vb.ValidatedValue(), &got))
		return c.NoContent(http.StatusOK)
	})
	req := httptest.NewRequest(http.MethodPost, "/v1/jobs", bytes.NewReader(body))
	req.Header.Set(echo.HeaderContentType, "application/json")
	rec := httptest.NewRecorder()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	require.Equal(t, http.StatusOK, rec.Code, "%s", rec.Body)

	require.Equal(t, "p", got.PolicyId, "snake_case members are renamed")
	require.Len(t, got.ContentData, len(items))
	require.Equal(t, text, *got.ContentData[127].Text)
	require.Equal(t, gen.StringMap{"i_d": "x"}, *got.ContentData[0].Metadata, "map keys are kept as sent")
	require.Nil(t, got.WaitForCompletion, "an unset field stays unset: request defaults are stated in descriptions (TestSpecNoPropertyDefaults)")

	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("body %d bytes, allocated %d bytes (%.2fx)", len(body), allocated, float64(allocated)/float64(len(body)))
	require.Less(t, allocated, 3*uint64(len(body))/2, "the body is read once and its strings are not copied")
}
