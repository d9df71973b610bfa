package handlers_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/handlers"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// TestRequestIDIsValidated: a client's X-Request-Id is kept when gRPC would
// keep its x-request-id, and replaced by a new id otherwise; the log line
// carries the id answered, never the client's rejected one.
func TestRequestIDIsValidated(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{"token", "req-42_a.B", true},
		{"longest", strings.Repeat("a", 128), true},
		{"too long", strings.Repeat("a", 129), false},
		{"space", "req 42", false},
		{"forged log field", `x","level":"ERROR`, false},
		{"non-ASCII", "réq-42", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := newServer(t, &logs)
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			req.Header.Set(echo.HeaderXRequestID, tc.id)
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			require.Equal(t, http.StatusOK, rec.Code)
			got := rec.Header().Get(echo.HeaderXRequestID)
			if tc.kept {
				require.Equal(t, tc.id, got)
			} else {
				require.Regexp(t, `^[0-9a-f]{32}$`, got)
				require.NotContains(t, logs.String(), tc.id)
			}
			require.Contains(t, logs.String(), `"request_id":"`+got+`"`)
		})
	}
}

// TestSecurityHeaders: every answer says nosniff, API errors included; the
// reference page also has its Content-Security-Policy and may not be framed.
func TestSecurityHeaders(t *testing.T) {
	e := newServer(t, &bytes.Buffer{})
	for _, tc := range []struct {
		path   string
		status int
		docs   bool
	}{
		{"/docs", http.StatusOK, true},
		{"/docs/redoc.standalone.js", http.StatusOK, false},
		{"/openapi.yaml", http.StatusOK, false},
		{"/healthz", http.StatusOK, false},
		{"/v1/jobs", http.StatusUnauthorized, false},
		{"/v1/no-such-route", http.StatusNotFound, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			require.Equal(t, tc.status, rec.Code)
			require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
			if tc.docs {
				require.Equal(t, handlers.DocsContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"))
				require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"))
			}
		})
	}
}
