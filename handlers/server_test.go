package handlers_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/handlers"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

func newServer(t *testing.T, logs io.Writer) *echo.Echo {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	keys := access.NewKeyService(nil, nil, priv, domain.SystemClock{}, 0)
	e, err := handlers.New(handlers.Config{BodyLimit: 1 << 20}, handlers.Deps{
		Log: slog.New(slog.NewJSONHandler(logs, nil)), Keys: keys,
		Limiter: access.NewRateLimiter(domain.Limits{}, domain.SystemClock{}),
	})
	require.NoError(t, err)
	return e
}

// TestInternalErrorsDoNotLeak: panics and unknown errors become INTERNAL with
// a generic message; the real cause is only logged, with the request id.
func TestInternalErrorsDoNotLeak(t *testing.T) {
	var logs bytes.Buffer
	e := newServer(t, &logs)
	e.GET("/panic", func(echo.Context) error { panic("secret table users_pk violated at /srv/x.go:12") })
	e.GET("/fail", func(echo.Context) error { return errors.New(`pq: relation "jobs" does not exist`) })
	for _, path := range []string{"/panic", "/fail"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusInternalServerError, rec.Code)
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		require.Equal(t, map[string]any{"code": float64(13), "message": "internal error"}, body)
		id := rec.Header().Get(echo.HeaderXRequestID)
		require.NotEmpty(t, id)
		require.Contains(t, logs.String(), id)
	}
	require.Contains(t, logs.String(), "users_pk", "the cause is logged")
}

func TestDomainErrorsMapToHTTP(t *testing.T) {
	e := newServer(t, io.Discard)
	for code, status := range map[domain.Code]int{
		domain.InvalidArgument: 400, domain.FailedPrecondition: 400, domain.OutOfRange: 400,
		domain.Unauthenticated: 401, domain.PermissionDenied: 403, domain.NotFound: 404,
		domain.AlreadyExists: 409, domain.Aborted: 409, domain.ResourceExhausted: 429,
		domain.Canceled: 499, domain.Unimplemented: 501, domain.Internal: 500,
		domain.Unavailable: 503, domain.DeadlineExceeded: 504,
	} {
		code := code
		e.GET("/c"+code.String(), func(echo.Context) error { return domain.Errorf(code, "m") })
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/c"+code.String(), nil))
		require.Equal(t, status, rec.Code, code.String())
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		require.EqualValues(t, code, body["code"])
	}
}
