package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/handlers"
	"github.com/contenteval/contenteval/persistence"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// CheapGETPath is the authenticated, validated cheap GET both servers answer:
// listLabelTags, a label-first operation with no parameters and no body.
const CheapGETPath = "/v1/label-tags"

// bareBody is what the bare handler answers: the body the full server gives
// an account without tags, encoded on every request as the full server does.
type bareBody struct {
	LabelTags []string `json:"labelTags"`
}

// BareHandler is the baseline: Echo with no middleware at all and one route
// on CheapGETPath returning a small fixed JSON body.
func BareHandler() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	body := bareBody{LabelTags: []string{}}
	e.GET(CheapGETPath, func(c echo.Context) error { return c.JSON(http.StatusOK, body) })
	return e
}

// Full is the whole contenteval HTTP stack (handlers.New: request id, JSON
// logging, metrics, recovery, operation resolution, body limit, JWT auth,
// rate limiting, account-type gating, aliases, kin-openapi validation,
// strict handlers, error funnel) on a migrated SQLite database holding one
// label-first account (no label tags) and one API key, wired as
// cmd/contenteval wires it.
type Full struct {
	Handler *echo.Echo
	// Token is the bearer token of the account's key.
	Token string
	db    *persistence.DB
}

// NewFull builds the full server with its database in dir. The rate limit is
// off (RequestsPerSecond 0 means unlimited) so the load measures the path,
// not the limiter's refusals; the limiter still runs on every request. The
// key cache uses the serve default (5s), as in production. Logs are encoded
// as JSON, as in production, into io.Discard.
func NewFull(ctx context.Context, dir string) (*Full, error) {
	db, err := persistence.Open(ctx, "sqlite:"+filepath.Join(dir, "bench.db"))
	if err != nil {
		return nil, err
	}
	f := &Full{db: db}
	if err := f.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return f, nil
}

func (f *Full) init(ctx context.Context) error {
	if err := f.db.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	clock := domain.SystemClock{}
	accounts := persistence.NewAccounts(f.db)
	keys := access.NewKeyService(persistence.NewKeys(f.db), accounts, priv, clock, 5*time.Second)
	limiter := access.NewRateLimiter(domain.Limits{RequestsPerSecond: 0}, clock)
	labels := labels.NewService(persistence.NewLabels(f.db), persistence.NewLabelVersions(f.db), persistence.NewLabelTags(f.db),
		clock, paging.NewTokens(keys.DeriveSecret("contenteval/page-tokens/labels")))

	now := clock.Now()
	a := &domain.Account{
		ID: uuid.NewString(), Name: "bench", Type: domain.AccountLabelFirst,
		WebhookSecret: "whsec_YmVuY2htYXJrLW9ubHktbm90LWEtc2VjcmV0LTAwMDA=", Created: now, Updated: now,
	}
	if err := accounts.CreateAccount(ctx, a); err != nil {
		return err
	}
	if _, f.Token, err = keys.Issue(ctx, a.ID, "bench", 0); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e, err := handlers.New(handlers.Config{BodyLimit: 32 << 20}, handlers.Deps{
		Log: log, Keys: keys, Limiter: limiter, Labels: labels, Ready: f.db.Ping,
	})
	if err != nil {
		return err
	}
	f.Handler = e
	return nil
}

// Close releases the database.
func (f *Full) Close() error { return f.db.Close() }

// Serve serves h on a fresh 127.0.0.1 port with the server settings of
// handlers.HTTPServer and returns its base URL and a function that stops it
// and reports how serving ended. Both servers under test go through here, so
// they differ in the handler only.
func Serve(h *echo.Echo) (baseURL string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := handlers.HTTPServer(ln.Addr().String(), h)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shutdownErr := srv.Shutdown(ctx)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return shutdownErr
	}
	return "http://" + ln.Addr().String(), stop, nil
}
