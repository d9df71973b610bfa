package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"

	"sync"
	"testing"

	contenteval "github.com/contenteval/contenteval"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"
)

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

// loadSpec loads openapi.yaml with validation on, as our users' tools do.
func loadSpec(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	specOnce.Do(loadSpecOnce)
	require.NoError(t, specErr)
	return specDoc, specRouter
}

func loadSpecOnce() {
	l := openapi3.NewLoader()
	specDoc, specErr = l.LoadFromData(contenteval.OpenAPIYAML)
	if specErr != nil {
		return
	}
	if specErr = specDoc.Validate(context.Background()); specErr != nil {
		return
	}
	doc := *specDoc
	doc.Servers = nil
	specRouter, specErr = gorillamux.NewRouter(&doc)
}

// requireMatchesSpec checks a response against openapi.yaml: the documented
// schema for its operation and status, or the Status schema for routes the
// spec does not have.
func requireMatchesSpec(t *testing.T, r rawResponse) {
	t.Helper()
	doc, router := loadSpec(t)
	route, params, err := router.FindRoute(r.Req)
	if err != nil {
		schema := doc.Components.Schemas["Status"].Value
		var v any
		require.NoError(t, jsonUnmarshal(r.Body, &v))
		require.NoError(t, schema.VisitJSON(v), "body %s", r.Body)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: r.Req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: r.Status,
		Header: r.Header,
		Body:   io.NopCloser(bytes.NewReader(r.Body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), in), "%s %s -> %d %s", r.Req.Method, r.Req.URL.Path, r.Status, r.Body)
}

func TestSpecLoadsWithValidation(t *testing.T) {
	doc, _ := loadSpec(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.NotEmpty(t, op.OperationID, "%s %s", method, path)
			require.NotEmpty(t, op.Tags, "%s %s", method, path)
			require.NotEmpty(t, op.Summary, "%s %s", method, path)
			require.NotEmpty(t, op.Description, "%s %s", method, path)
			require.NotNil(t, op.Responses.Value("200"), "%s %s has no 200", method, path)
			def := op.Responses.Default()
			require.NotNil(t, def, "%s %s has no default response", method, path)
			require.NotNil(t, def.Value.Content.Get("application/json"), "%s %s", method, path)
			// The OpenAI-compatible endpoint answers OpenAI's error body;
			// every other operation the Status.
			errorSchema := "#/components/schemas/Status"
			if slices.Contains(op.Tags, "compat") {
				errorSchema = "#/components/schemas/OpenAIErrorResponse"
			}
			require.Equal(t, errorSchema, def.Value.Content.Get("application/json").Schema.Ref, "%s %s", method, path)
		}
	}
}

// TestSpecComponentsReferenced stands in for redocly's no-unused-components,
// which does not follow references in extensions (the stream's
// x-itemSchema): every component of openapi.yaml is referenced somewhere
// in the document.
func TestSpecComponentsReferenced(t *testing.T) {
	doc, _ := loadSpec(t)
	b, err := doc.MarshalJSON() // references stay $ref, extensions as written
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	refs := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				refs[r] = true
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(raw)
	components := raw["components"].(map[string]any)
	for kind, items := range components {
		if kind == "securitySchemes" {
			continue // referenced by name from security requirements
		}
		for name := range items.(map[string]any) {
			ref := "#/components/" + kind + "/" + name
			require.True(t, refs[ref], "%s is not referenced", ref)
		}
	}
	require.True(t, refs["#/components/schemas/StreamJobsMessage"], "the stream's line schema")
}

// TestSpecNoPropertyDefaults keeps defaults out of property schemas:
// openapi-typescript (defaultNonNullable, on by default) makes a property
// with a default required, so a request default (waitForCompletion's
// false) made every TypeScript caller send the field. Defaults are stated
// in descriptions; the enums keep their UNSPECIFIED default on the enum
// schema, which properties reference.
func TestSpecNoPropertyDefaults(t *testing.T) {
	doc, _ := loadSpec(t)
	var check func(path string, s *openapi3.SchemaRef, seen map[*openapi3.Schema]bool)
	check = func(path string, s *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		seen[s.Value] = true
		for name, p := range s.Value.Properties {
			if p.Ref == "" {
				require.Nil(t, p.Value.Default, "%s.%s declares a default", path, name)
			}
			check(path+"."+name, p, seen)
		}
		check(path+"[]", s.Value.Items, seen)
		for _, x := range append(append(s.Value.AllOf, s.Value.OneOf...), s.Value.AnyOf...) {
			check(path, x, seen)
		}
	}
	for name, s := range doc.Components.Schemas {
		check(name, s, map[*openapi3.Schema]bool{})
	}
}
