package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unsafe"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
)

// validateRequest checks each API request against its operation in the spec
// with kin-openapi, and decodes a JSON body once for the validator and the
// strict handler both (docs/api.md#limits: one request's peak memory stays under 8x
// its body plus 64 MiB).
//
// openapi3filter.ValidateRequest, as oapi-codegen's echo middleware calls
// it, copied a 30 MiB body about twelve times: io.ReadAll of the body for
// the security check and again for the body (each through doubling
// buffers), a json.Decoder that buffers it once more, the decoded strings,
// and, since a schema declares a default, the whole value encoded back to
// JSON. Here parameters and security are validated by openapi3filter with
// the body hidden; a body guardInput read whole is decoded in place by
// decodeJSON, its snake_case keys renamed (acceptAliases' rule), and
// validated with the same schema options openapi3filter would use. The
// value is handed to the strict handler (ValidatedValue), which binds it
// without decoding again; defaults are set in it, not written back as JSON.
// Other bodies (empty, not JSON) go through openapi3filter as before.
func (s *Server) validateRequest(spec *openapi3.T) (echo.MiddlewareFunc, error) {
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, err
	}
	paramOpts := &openapi3filter.Options{
		ExcludeRequestBody: true,
		MultiError:         true,
		// Authentication already ran (s.authenticate): it needs the
		// account before the body is read.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	}
	bodyOpts := &openapi3filter.Options{MultiError: true, KeepValidatedValue: true}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if operationOf(c) == nil {
				return next(c)
			}
			req := c.Request()
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				var re *routers.RouteError
				if errors.As(err, &re) {
					return echo.NewHTTPError(http.StatusNotFound, re.Reason)
				}
				return echo.NewHTTPError(http.StatusInternalServerError, "error validating route: "+err.Error())
			}
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: paramOpts}
			ctx := req.Context()
			// The security check reads the whole body into a copy it
			// keeps, for authentication functions that might want it;
			// ours does not.
			body := req.Body
			req.Body = http.NoBody
			err = openapi3filter.ValidateRequest(ctx, in)
			req.Body = body
			var me openapi3.MultiError
			if err != nil && !errors.As(err, &me) {
				me = openapi3.MultiError{err}
			}
			if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil {
				bodyIn := *in
				bodyIn.Options = bodyOpts
				if err := validateBody(ctx, &bodyIn, rb.Value); err != nil {
					me = append(me, err)
				}
			}
			if len(me) > 0 {
				return validationError(me)
			}
			return next(c)
		}
	}, nil
}

// validateBody is openapi3filter.ValidateRequestBody for a JSON body that
// guardInput read and scanned: the same errors, without its copies.
func validateBody(ctx context.Context, in *openapi3filter.RequestValidationInput, rb *openapi3.RequestBody) error {
	req := in.Request
	read, ok := req.Body.(*readBytes)
	var mt *openapi3.MediaType
	if ok {
		mt = rb.Content.Get(req.Header.Get(echo.HeaderContentType))
	}
	if !ok || len(bytes.TrimSpace(read.b)) == 0 || mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return openapi3filter.ValidateRequestBody(ctx, in, rb)
	}
	v, err := decodeJSON(read.b)
	if err != nil {
		return &openapi3filter.RequestError{
			Input: in, RequestBody: rb, Reason: "failed to decode request body",
			Err: &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: err},
		}
	}
	// From here on nothing refers to the bytes: the body's buffer is
	// garbage while the handler runs.
	req.Body = &validatedBody{value: v}
	req.ContentLength = -1
	schema := mt.Schema.Value
	renameKeys(v, schema)
	err = schema.VisitJSON(v, openapi3.VisitAsRequest(), openapi3.DefaultsSet(func() {}), openapi3.MultiErrors())
	if err != nil {
		id := strings.TrimSpace(mt.Schema.Ref)
		if id == "" {
			id = strings.TrimSpace(schema.Title)
		}
		if id != "" {
			id = " " + id
		}
		return &openapi3filter.RequestError{Input: in, RequestBody: rb, Reason: "doesn't match schema" + id, Err: err}
	}
	return nil
}

// validatedBody is a request body decoded and validated: the generated
// strict handlers bind its ValidatedValue. Reading it (a handler that binds
// the body itself) reads the value encoded again, defaults included, as
// openapi3filter would have left it.
type validatedBody struct {
	value any
	r     *bytes.Reader
}

func (b *validatedBody) ValidatedValue() any { return b.value }

func (b *validatedBody) Read(p []byte) (int, error) {
	if b.r == nil {
		data, err := json.Marshal(b.value)
		if err != nil {
			return 0, err
		}
		b.r = bytes.NewReader(data)
	}
	return b.r.Read(p)
}

func (*validatedBody) Close() error { return nil }

var _ io.ReadCloser = (*validatedBody)(nil)

// decodeJSON returns the value json.Decoder with UseNumber gives for b:
// map[string]any, []any, string, json.Number, bool, nil. It reads b in place
// where the decoder would first copy it into a buffer growing by doubling,
// and does not copy the strings either (see str). b has passed scanJSON (depth, size, UTF-8),
// but numbers, literals and raw control bytes in strings are checked here,
// as the decoder checks them.
func decodeJSON(b []byte) (any, error) {
	d := jsonDecoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.space(); d.i != len(b) {
		return nil, d.errorf("data after the top-level value")
	}
	return v, nil
}

type jsonDecoder struct {
	b []byte
	i int
}

func (d *jsonDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%s at byte %d", fmt.Sprintf(format, args...), d.i)
}

func (d *jsonDecoder) space() { d.i = skipSpace(d.b, d.i) }

// expect consumes c after optional white space.
func (d *jsonDecoder) expect(c byte) bool {
	if d.space(); d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *jsonDecoder) value(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, d.errorf("nesting too deep")
	}
	if d.space(); d.i >= len(d.b) {
		return nil, d.errorf("unexpected end of JSON input")
	}
	switch c := d.b[d.i]; c {
	case '{':
		d.i++
		m := map[string]any{}
		if d.expect('}') {
			return m, nil
		}
		for {
			if d.space(); d.i >= len(d.b) || d.b[d.i] != '"' {
				return nil, d.errorf("want a member name")
			}
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			if !d.expect(':') {
				return nil, d.errorf("want ':'")
			}
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[k] = v
			if d.expect(',') {
				continue
			}
			if d.expect('}') {
				return m, nil
			}
			return nil, d.errorf("want ',' or '}'")
		}
	case '[':
		d.i++
		a := []any{}
		if d.expect(']') {
			return a, nil
		}
		for {
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			if d.expect(',') {
				continue
			}
			if d.expect(']') {
				return a, nil
			}
			return nil, d.errorf("want ',' or ']'")
		}
	case '"':
		return d.str()
	case 't', 'f', 'n':
		for _, lit := range [...]struct {
			text string
			v    any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if bytes.HasPrefix(d.b[d.i:], []byte(lit.text)) {
				d.i += len(lit.text)
				return lit.v, nil
			}
		}
		return nil, d.errorf("invalid literal")
	default:
		return d.number()
	}
}

// str decodes the string starting at the quote at d.i. A string without
// escapes (the large texts) is not copied: it is a view of the body, which
// readBody allocated for this request alone and nothing writes after it;
// the body then lives as long as the longest-lived of its strings, which
// costs at most its size once, where copies would cost it again. The rare
// strings with escapes are unquoted by encoding/json, for its exact
// handling of escapes and surrogates.
func (d *jsonDecoder) str() (string, error) {
	start := d.i
	escaped := false
	for i := start + 1; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			d.i = i + 1
			if !escaped {
				if i == start+1 {
					return "", nil
				}
				return unsafe.String(&d.b[start+1], i-start-1), nil
			}
			var s string
			if err := json.Unmarshal(d.b[start:d.i], &s); err != nil {
				return "", err
			}
			return s, nil
		case c == '\\':
			escaped = true
			i++ // the escaped byte; \uXXXX's digits are plain bytes
		case c < 0x20:
			d.i = i
			return "", d.errorf("control character in string")
		}
	}
	d.i = len(d.b)
	return "", d.errorf("unterminated string")
}

// number reads a number as JSON's grammar has it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *jsonDecoder) number() (any, error) {
	b, start := d.b, d.i
	i := start
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		d.i = i
		return nil, d.errorf("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			d.i = i
			return nil, d.errorf("invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			d.i = i
			return nil, d.errorf("invalid number")
		}
	}
	d.i = i
	return json.Number(b[start:i]), nil
}
