package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contenteval/contenteval/domain"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// Bounds of a JSON body by kind of operation (docs/api.md#limits). Operations that
// carry content (a contentData field: jobs, streams, label evaluation,
// dataset examples) take bodies up to Config.BodyLimit; their values are
// bounded by what a full job needs: 1,000 per item at the default 100 items
// (metadata included). The
// others hold names, ids and rule text and take far less. A decoded value
// costs the validator some 100 to 300 bytes, so 100,000 of them stay within
// the 64 MiB docs/api.md#limits allows besides 8x the body.
const (
	contentMaxValues = 100_000
	otherMaxValues   = 10_000
	// otherBodyAllowance is what operations without content may send
	// besides their rule text: a label version's global context is 65,536
	// characters, up to 12 bytes each when sent as escaped surrogate pairs.
	otherBodyAllowance = 1 << 20
)

// inputRules is what guardInput enforces on one operation's body.
type inputRules struct {
	schema    *openapi3.Schema // the JSON body's; nil when the body is not JSON
	bodyLimit int64
	maxValues int
}

// setInputRules gives every operation its body bounds.
func (s *Server) setInputRules() {
	limit := s.cfg.BodyLimit
	if limit <= 0 {
		limit = 32 << 20
	}
	// Rule text may arrive escaped (\u00XX is six bytes for one).
	small := otherBodyAllowance + 8*int64(s.cfg.RuleTextMaxBytes)
	for _, o := range s.ops {
		o.input = inputRules{schema: jsonBodySchema(o.spec), bodyLimit: min(small, limit), maxValues: otherMaxValues}
		if carriesContent(o.input.schema) || hasTag(o.spec, "compat") {
			o.input.bodyLimit, o.input.maxValues = limit, contentMaxValues
		}
	}
}

// carriesContent reports whether a body schema carries content: a
// contentData field, or a list of items that have one (dataset examples).
func carriesContent(schema *openapi3.Schema) bool {
	if schema == nil {
		return false
	}
	if schema.Properties["contentData"] != nil {
		return true
	}
	for _, p := range schema.Properties {
		if p.Value != nil && p.Value.Items != nil && p.Value.Items.Value != nil && p.Value.Items.Value.Properties["contentData"] != nil {
			return true
		}
	}
	return false
}

// guardInput refuses, before anything decodes or stores them, path and query
// values with NUL or invalid UTF-8, and JSON bodies that scanJSON refuses
// (docs/api.md#input-leniency). PostgreSQL cannot hold either kind of text in a text column
// and answered them with an error; SQLite stored them. It runs after
// authentication, so an anonymous caller learns nothing but 401.
func (s *Server) guardInput(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		o := operationOf(c)
		if o == nil {
			return next(c)
		}
		var violations []domain.FieldViolation
		values := c.ParamValues()
		for i, name := range c.ParamNames() {
			if i < len(values) {
				if reason := badPathText(values[i]); reason != "" {
					violations = append(violations, domain.FieldViolation{Field: name, Description: reason})
				}
			}
		}
		req := c.Request()
		if req.URL.RawQuery != "" {
			violations = append(violations, queryViolations(o, req.URL.Query())...)
		}
		if len(violations) > 0 {
			return invalidFields(violations)
		}
		if o.input.schema == nil || req.Body == nil || req.Body == http.NoBody || !isJSONMedia(req.Header.Get(echo.HeaderContentType)) {
			// A body of another type is refused by the validator unread.
			return next(c)
		}
		body, err := readBody(req, o.input.bodyLimit)
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(body)) > 0 {
			if p := scanJSON(body, o.input.maxValues); p != nil {
				return p.toError(o.input)
			}
		}
		req.Body = &readBytes{Reader: bytes.NewReader(body), b: body}
		req.ContentLength = int64(len(body))
		return next(c)
	}
}

// readBytes is a body guardInput has read whole; validateBody decodes its
// bytes in place instead of reading them again.
type readBytes struct {
	*bytes.Reader
	b []byte
}

func (*readBytes) Close() error { return nil }

// readBody reads the whole body into one buffer sized by Content-Length, so
// a large body is not copied through doubling buffers (io.ReadAll) on the way.
func readBody(req *http.Request, limit int64) ([]byte, error) {
	tooLarge := domain.InvalidField("body", "request body is too large: this operation accepts at most "+strconv.FormatInt(limit, 10)+" bytes")
	if req.ContentLength > limit {
		return nil, tooLarge
	}
	size := int64(512)
	if req.ContentLength >= 0 {
		size = req.ContentLength
	}
	b := make([]byte, 0, size+1) // +1: EOF is seen without growing
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := req.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, tooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// isJSONMedia reports the media type the validator decodes as this API's
// JSON, compared as it does (parameters dropped, case ignored). Others are
// refused by it before being read.
func isJSONMedia(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), echo.MIMEApplicationJSON)
}

// badText says why PostgreSQL cannot store s, or "".
func badText(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return reasonNUL
	case !utf8.ValidString(s):
		return reasonUTF8
	}
	return ""
}

// badPathText is badText for a path parameter. Echo routes on the raw path
// when the request has one (an escaped slash makes Go keep it), leaving the
// parameter escaped; the generated wrappers unescape it after this guard.
func badPathText(s string) string {
	if reason := badText(s); reason != "" || strings.IndexByte(s, '%') < 0 {
		return reason
	}
	if u, err := url.PathUnescape(s); err == nil {
		return badText(u)
	}
	return ""
}

func queryViolations(o *operation, q map[string][]string) []domain.FieldViolation {
	var out []domain.FieldViolation
	for k, vs := range q {
		if reason := badText(k); reason != "" {
			out = append(out, domain.FieldViolation{Field: "query", Description: "a parameter name " + reason})
			continue
		}
		name := k
		if declared, ok := o.queryAliases[k]; ok {
			name = declared
		}
		for _, v := range vs {
			if reason := badText(v); reason != "" {
				out = append(out, domain.FieldViolation{Field: name, Description: reason})
				break
			}
		}
	}
	return out
}

func invalidFields(vs []domain.FieldViolation) *domain.Error {
	return &domain.Error{
		Code:    domain.InvalidArgument,
		Message: "invalid " + vs[0].Field + ": " + vs[0].Description,
		Details: []domain.Detail{domain.BadRequest{FieldViolations: vs}},
	}
}

// toError is the INVALID_ARGUMENT of a refused body, naming the field as the
// validator would (contentData[0].text), in the spelling the spec declares.
func (p *jsonProblem) toError(r inputRules) *domain.Error {
	field := fieldPath(p.path, r.schema)
	desc := p.reason
	switch {
	case p.syntax:
		return domain.InvalidField("body", fmt.Sprintf("%s at byte %d", p.reason, p.offset))
	case p.reason == reasonTooMany:
		desc = fmt.Sprintf("is past the %d values this operation accepts in one body", r.maxValues)
	}
	return domain.InvalidField(field, desc)
}

// fieldPath renders a path as a dotted field name. Member names the schema
// declares in camelCase are given so when sent in snake_case (as the alias
// rewrite would); the keys of free-form maps are kept as sent.
func fieldPath(path []pathStep, schema *openapi3.Schema) string {
	var b strings.Builder
	for _, st := range path {
		if st.array {
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
			if schema != nil && schema.Items != nil {
				schema = schema.Items.Value
			} else {
				schema = nil
			}
			continue
		}
		key := memberName(st.key)
		var next *openapi3.Schema
		if schema != nil {
			if p := schema.Properties[key]; p != nil {
				next = p.Value
			} else if p := schema.Properties[camelCase(key)]; p != nil {
				key, next = camelCase(key), p.Value
			} else if ap := schema.AdditionalProperties.Schema; ap != nil {
				next = ap.Value
			}
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(key)
		schema = next
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// memberName decodes a member name as sent (escapes included).
func memberName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}
