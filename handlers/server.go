package handlers

import (
	"context"
	"github.com/contenteval/contenteval/tracing"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/domain/batches"
	"github.com/contenteval/contenteval/domain/hashlists"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/moderation"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/quality"
	"github.com/contenteval/contenteval/domain/review"
	"github.com/contenteval/contenteval/gen"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the HTTP settings, already validated by cmd.
type Config struct {
	// BodyLimit is the largest request body accepted, in bytes.
	BodyLimit int64
	// RuleTextMaxBytes is the longest rule text (policies, label
	// versions); operations without content take bodies of eight times it
	// plus 1 MiB (at most BodyLimit).
	RuleTextMaxBytes int
	// StreamWriteTimeout is how long writing one line of a job stream may
	// take; 0 is 2 minutes.
	StreamWriteTimeout time.Duration
}

// Deps are the domain services the handlers translate to.
type Deps struct {
	Log     *slog.Logger
	Keys    *access.KeyService
	Limiter *access.RateLimiter
	// Labels serves labels, label tags and label versions.
	Labels *labels.Service
	// LabelEvaluation evaluates label versions and serves label hits and
	// feedback of jobs.
	LabelEvaluation *labels.EvaluationService
	// Policies serves policies and their versions (policy-first accounts).
	Policies *policies.Service
	// Jobs submits, runs, streams and lists jobs.
	Jobs *jobs.Service
	// Batches creates, lists and cancels batch jobs and moves their files.
	Batches *batches.Service
	// Moderation answers the OpenAI-compatible moderation endpoint.
	Moderation *moderation.Service
	// Quality serves dataset examples and runs, live metrics and shadow
	// versions (docs/api.md#extension-endpoints).
	Quality *quality.Service
	// Review serves review queues and items (docs/review.md).
	Review *review.Service
	// HashLists serves the accounts' hash lists of the precheck.
	HashLists *hashlists.Service
	// PublicURL is the server's external base URL (http://host:port), the
	// prefix of the signed URLs of the batch file endpoints.
	PublicURL func() string
	// Ready reports whether the service can take traffic: the database
	// answers and can write (persistence.DB.Ready).
	Ready func(ctx context.Context) error
	// Registry receives the HTTP metrics; nil makes a private one.
	Registry *prometheus.Registry
}

// Server implements gen.StrictServerInterface.
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	spec    *openapi3.T
	ops     map[routeKey]*operation
	metrics *httpMetrics
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New builds the Echo server: operational routes, then the validated,
// authenticated API group with the generated strict handlers.
func New(cfg Config, deps Deps) (*echo.Echo, error) {
	spec, err := gen.GetSpec()
	if err != nil {
		return nil, err
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, deps: deps, log: deps.Log, spec: spec, ops: operations(spec)}
	s.metrics = newHTTPMetrics(deps.Registry)
	s.setInputRules()

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// First, so that every later middleware (the request log among them)
	// runs inside the request's span.
	tracing.Echo(e)
	e.Use(
		assignRequestID,
		noSniff,
		s.requestLogger(),
		s.metrics.middleware(s),
		middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: s.logPanic}),
	)
	s.registerOperational(e)

	// The validator routes by host when the document has servers; clients reach
	// us under any host name, so route by path only.
	validated := *spec
	validated.Servers = nil
	validate, err := s.validateRequest(&validated)
	if err != nil {
		return nil, err
	}
	api := e.Group("",
		s.resolveOperation,
		middleware.BodyLimit(byteSize(cfg.BodyLimit)),
		s.authenticate,
		s.guardInput,
		s.acceptAliases,
		validate,
	)
	gen.RegisterHandlers(api, gen.NewStrictHandler(s, nil))
	return e, nil
}

func byteSize(n int64) string {
	if n <= 0 {
		n = 32 << 20
	}
	return strconv.FormatInt(n, 10) + "B"
}

// HTTPServer wraps e with the server timeouts. WriteTimeout is left to each
// handler (streams and long waits extend it), ReadTimeout bounds slow bodies.
func HTTPServer(addr string, e *echo.Echo) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
