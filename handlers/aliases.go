package handlers

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// acceptAliases rewrites the snake_case spellings of query parameters to
// the names the spec declares (docs/api.md#input-leniency: clients of gRPC-gateway services
// send either), and lowers an integer parameter above its declared maximum
// to that maximum (docs/api.md#paging: a page size above the maximum is treated as
// the maximum), before the validator would reject it. Body fields are
// renamed in the decoded body (renameKeys, from validateBody), only where
// the schema declares a property, so the keys of free-form maps (metadata,
// options, extra headers) are left exactly as sent.
func (s *Server) acceptAliases(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		o := operationOf(c)
		req := c.Request()
		if o == nil || req.URL.RawQuery == "" || len(o.queryAliases)+len(o.queryMaximum) == 0 {
			return next(c)
		}
		q := req.URL.Query()
		changed := false
		for k, vs := range q {
			if name, ok := o.queryAliases[k]; ok {
				q[name] = append(q[name], vs...)
				delete(q, k)
				changed = true
			}
		}
		for name, limit := range o.queryMaximum {
			for i, v := range q[name] {
				// What does not parse is left to the validator's error.
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > limit {
					q[name][i] = strconv.FormatInt(limit, 10)
					changed = true
				}
			}
		}
		if changed {
			// Nothing has read the query yet (Echo caches it on first read).
			req.URL.RawQuery = q.Encode()
		}
		return next(c)
	}
}

func jsonBodySchema(op *openapi3.Operation) *openapi3.Schema {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get(echo.MIMEApplicationJSON)
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}

// renameKeys renames, in a decoded body, the members the schema declares
// that were sent in snake_case (validateBody calls it before validating).
// It reports whether it changed anything.
func renameKeys(v any, schema *openapi3.Schema) bool {
	if schema == nil {
		return false
	}
	changed := false
	switch v := v.(type) {
	case map[string]any:
		if len(schema.Properties) > 0 {
			for k, val := range v {
				if _, declared := schema.Properties[k]; declared {
					continue
				}
				name := camelCase(k)
				if _, declared := schema.Properties[name]; !declared || name == k {
					continue
				}
				if _, present := v[name]; present {
					continue // the canonical spelling wins
				}
				v[name] = val
				delete(v, k)
				changed = true
			}
			for k, val := range v {
				if p := schema.Properties[k]; p != nil && renameKeys(val, p.Value) {
					changed = true
				}
			}
		}
	case []any:
		if schema.Items != nil {
			for _, item := range v {
				if renameKeys(item, schema.Items.Value) {
					changed = true
				}
			}
		}
	}
	return changed
}

// camelCase turns page_size into pageSize (dots are kept: query.status).
func camelCase(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	upper := false
	for _, r := range s {
		if r == '_' {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// snakeCase turns pageSize into page_size.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
