package main

// The contract check of every end-to-end exchange: the tests' HTTP clients
// (the generated client of env.Client, env.do, env.stream, the batch file
// transfers and the process tests' clients) go through contractTransport,
// which validates each response of a contenteval server against
// openapi.yaml with kin-openapi (openapi3filter.ValidateResponse), and each
// line of an application/x-ndjson stream against the line schema its media
// type names (x-itemSchema). A mismatch fails the call (the transport's
// error, or a read error for a stream line) and, in case a test ignored
// that error, the whole test binary (TestMain).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/stretchr/testify/require"
)

func init() {
	// The operational documents are strings to the spec (`type: string`):
	// /docs is HTML, for which kin-openapi has no decoder, and it would
	// decode /openapi.yaml into a YAML value rather than keep its text.
	// Nothing sends these types to the server, whose request validator
	// shares this registry in the test binary.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
}

// contractHosts are the host:port of the servers the tests started; only
// their responses are checked (presigned S3 URLs reach another server).
var contractHosts sync.Map

// registerContractHost adds the server at base (http://host:port).
func registerContractHost(base string) {
	if u, err := url.Parse(base); err == nil {
		contractHosts.Store(u.Host, true)
	}
}

// contractViolations are every mismatch seen in the run; TestMain fails
// the run when there is one, even if the test that saw it ignored the
// error.
var contractViolations struct {
	mu   sync.Mutex
	list []string
}

func contractViolation(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	contractViolations.mu.Lock()
	contractViolations.list = append(contractViolations.list, msg)
	contractViolations.mu.Unlock()
	return errors.New("contract: " + msg)
}

// contractReport returns the violations of the run, one per line.
func contractReport() string {
	contractViolations.mu.Lock()
	defer contractViolations.mu.Unlock()
	return strings.Join(contractViolations.list, "\n")
}

// contractTransport validates the responses of registered servers.
type contractTransport struct{ base http.RoundTripper }

// specClient is the HTTP client of the end-to-end tests.
var specClient = &http.Client{Transport: contractTransport{base: http.DefaultTransport}}

func (c contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if _, ours := contractHosts.Load(req.URL.Host); !ours || req.Method == http.MethodHead {
		return resp, nil
	}
	op := describeExchange(req, resp)
	route, params, routeErr := contractRouter(req)
	if routeErr == nil && isNDJSON(resp.Header) {
		line, err := lineSchema(route, resp.StatusCode)
		if err != nil {
			resp.Body.Close()
			return nil, contractViolation("%s: %v", op, err)
		}
		if err := validateResponse(req, resp, route, params, nil, true); err != nil {
			resp.Body.Close()
			return nil, contractViolation("%s: %v", op, err)
		}
		resp.Body = &ndjsonChecker{body: resp.Body, rd: bufio.NewReader(resp.Body), schema: line, op: op}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if routeErr != nil {
		// No such operation: the error funnel's Status body, or an asset
		// of the docs page (/docs/redoc.standalone.js), which the spec
		// does not list.
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && resp.StatusCode < 400 {
			return resp, nil
		}
		if err := validateStatusBody(req.URL.Path, body); err != nil {
			return nil, contractViolation("%s (no operation): %v: %.2000s", op, err, body)
		}
		return resp, nil
	}
	if err := validateResponse(req, resp, route, params, body, false); err != nil {
		return nil, contractViolation("%s: %v: %.2000s", op, err, body)
	}
	return resp, nil
}

func describeExchange(req *http.Request, resp *http.Response) string {
	return fmt.Sprintf("%s %s -> %d %s", req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"))
}

// contractRouter finds the spec operation of req (by path: the router is
// built without servers).
func contractRouter(req *http.Request) (*routers.Route, map[string]string, error) {
	_, router, err := specForContract()
	if err != nil {
		return nil, nil, err
	}
	return router.FindRoute(req)
}

// specForContract is loadSpec without a *testing.T.
func specForContract() (*openapi3.T, routers.Router, error) {
	specOnce.Do(loadSpecOnce)
	return specDoc, specRouter, specErr
}

func validateResponse(req *http.Request, resp *http.Response, route *routers.Route, params map[string]string, body []byte, headersOnly bool) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			ExcludeResponseBody:   headersOnly,
		},
	}
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// validateStatusBody checks the error body of a request no operation
// matched: the Status, or OpenAI's error on the OpenAI-compatible path
// (an unknown method there).
func validateStatusBody(path string, body []byte) error {
	doc, _, err := specForContract()
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	schema := "Status"
	if path == "/v1/moderations" {
		schema = "OpenAIErrorResponse"
	}
	return doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.MultiErrors())
}

func isNDJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/x-ndjson"
}

// lineSchema is the schema of one line of the operation's NDJSON response
// for status: the media type's x-itemSchema. A stream without one is a
// contract error (nothing would tell a client what the lines are), except
// for a binary file (the batch output), whose lines the spec leaves to the
// description.
func lineSchema(route *routers.Route, status int) (*openapi3.Schema, error) {
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		resp = route.Operation.Responses.Default()
	}
	if resp == nil || resp.Value == nil {
		return nil, fmt.Errorf("status %d is not documented", status)
	}
	mt := resp.Value.Content.Get("application/x-ndjson")
	if mt == nil {
		return nil, errors.New("application/x-ndjson is not a documented media type")
	}
	raw, ok := mt.Extensions["x-itemSchema"].(map[string]any)
	if !ok {
		if mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Format == "binary" {
			return nil, nil
		}
		return nil, errors.New("application/x-ndjson has no x-itemSchema")
	}
	ref, _ := raw["$ref"].(string)
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok {
		return nil, fmt.Errorf("x-itemSchema is not a component reference: %v", raw)
	}
	doc, _, err := specForContract()
	if err != nil {
		return nil, err
	}
	s := doc.Components.Schemas[name]
	if s == nil || s.Value == nil {
		return nil, fmt.Errorf("x-itemSchema names no schema: %s", ref)
	}
	return s.Value, nil
}

// ndjsonChecker passes a stream through, validating each complete line as
// the reader gets to it. A nil schema (a binary file) checks only that
// every line is JSON.
type ndjsonChecker struct {
	body    io.ReadCloser
	rd      *bufio.Reader
	schema  *openapi3.Schema
	op      string
	pending []byte
	err     error
	lines   int
}

func (c *ndjsonChecker) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		line, err := c.rd.ReadBytes('\n')
		if len(line) > 0 && (err == nil || errors.Is(err, io.EOF)) {
			// A line cut by a failed read is the read's error, not the
			// server's: only a stream that ends cleanly is judged.
			if verr := c.check(line, err == nil); verr != nil {
				c.err = verr
				return 0, verr
			}
			c.pending = line
		}
		if err != nil {
			c.err = err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// check validates one line; complete is false for a last line without its
// newline, which is an error only at the end of the stream.
func (c *ndjsonChecker) check(line []byte, complete bool) error {
	c.lines++
	if !complete {
		return contractViolation("%s: line %d has no final newline: %q", c.op, c.lines, line)
	}
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return contractViolation("%s: line %d is not JSON: %v: %q", c.op, c.lines, err, line)
	}
	if c.schema == nil {
		return nil
	}
	if err := c.schema.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return contractViolation("%s: line %d does not match the line schema: %v: %.2000s", c.op, c.lines, err, line)
	}
	return nil
}

func (c *ndjsonChecker) Close() error { return c.body.Close() }

// TestContractTransportCatchesMismatches serves answers that break the
// contract from a fake server and checks that the transport fails them:
// a JSON body of the wrong shape, an undocumented content type, a stream
// line that is not a StreamJobsMessage, a stream cut mid-line, and a
// Status body of the wrong shape on an unknown route.
func TestContractTransportCatchesMismatches(t *testing.T) {
	good := `{"result":{"jobUuid":"j","jobResultId":"r","contentHash":"h"}}` + "\n"
	answers := map[string]struct{ contentType, body string }{
		"/v1/label-tags":  {"application/json", `{"labelTags":[{"name":1}]}`},
		"/v1/labels/abc":  {"text/plain", `not json`},
		"/v1/jobs/stream": {"application/x-ndjson", good + `{"result":{"jobUuid":7}}` + "\n"},
		"/v1/nowhere":     {"application/json", `{"code":"five"}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Path]
		if r.URL.Query().Get("cut") != "" {
			a.body = good + `{"resu`
		}
		w.Header().Set("Content-Type", a.contentType)
		if r.URL.Path == "/v1/nowhere" {
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = io.WriteString(w, a.body)
	}))
	defer srv.Close()
	registerContractHost(srv.URL)
	contractViolations.mu.Lock()
	before := len(contractViolations.list)
	contractViolations.mu.Unlock()
	defer func() {
		// These violations are the test's own: keep them from failing the run.
		contractViolations.mu.Lock()
		contractViolations.list = contractViolations.list[:before]
		contractViolations.mu.Unlock()
	}()

	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/label-tags"},
		{http.MethodGet, "/v1/labels/abc"},
		{http.MethodGet, "/v1/nowhere"},
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, nil)
		require.NoError(t, err)
		_, err = specClient.Do(req)
		require.ErrorContains(t, err, "contract:", c.path)
	}
	for _, query := range []string{"", "?cut=1"} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/jobs/stream"+query, strings.NewReader(`{}`))
		require.NoError(t, err)
		resp, err := specClient.Do(req)
		require.NoError(t, err, "the status line and headers are right")
		rd := bufio.NewReader(resp.Body)
		first, err := rd.ReadBytes('\n')
		require.NoError(t, err, "the first line is a StreamJobsMessage")
		require.Equal(t, good, string(first))
		_, err = rd.ReadBytes('\n')
		require.ErrorContains(t, err, "contract:", "the second line")
		resp.Body.Close()
	}
	contractViolations.mu.Lock()
	require.Len(t, contractViolations.list, before+5)
	contractViolations.mu.Unlock()
}
