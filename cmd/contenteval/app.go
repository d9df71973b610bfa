package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/domain/batches"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/hashlists"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/moderation"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/quality"
	"github.com/contenteval/contenteval/domain/retention"
	"github.com/contenteval/contenteval/domain/review"
	"github.com/contenteval/contenteval/domain/webhooks"
	"github.com/contenteval/contenteval/handlers"
	"github.com/contenteval/contenteval/modelbackend"
	"github.com/contenteval/contenteval/ocr"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/precheck"
	"github.com/contenteval/contenteval/safehttp"
	"github.com/prometheus/client_golang/prometheus"
)

// Main wires the program: configuration in, database, domain services and
// the HTTP server out. End-to-end tests run it on 127.0.0.1:0.
type Main struct {
	Config Config
	Stdout io.Writer
	Stderr io.Writer
	Clock  domain.Clock

	Log      *slog.Logger
	DB       *persistence.DB
	Accounts *persistence.Accounts
	Keys     *access.KeyService
	Limiter  *access.RateLimiter
	Labels   *labels.Service
	// LabelEvaluation serves POST /v1/labels/evaluate, label hits and feedback.
	LabelEvaluation *labels.EvaluationService
	Policies        *policies.Service
	Jobs            *jobs.Service
	Batches         *batches.Service
	// Moderation serves the OpenAI-compatible moderation endpoint.
	Moderation *moderation.Service
	// Quality serves dataset examples and runs, live metrics and shadow
	// versions, and runs their queued work (docs/api.md#extension-endpoints).
	Quality *quality.Service
	// Review serves review queues and items (review.go).
	Review *review.Service
	Blobs  domain.BlobStore
	// URLs fetches customer URLs (images, media) and posts webhooks under
	// the address rules of docs/api.md#url-fetching.
	URLs     *safehttp.Client
	Webhooks *webhooks.Deliverer
	// Precheck holds the hash lists every image is checked against.
	Precheck *precheck.Service
	// HashLists serves the accounts' hash lists (the API).
	HashLists *hashlists.Service
	OCR       *ocr.Tesseract
	// Backends are the model backends of --backends-file (nil without).
	Backends *modelbackend.Registry
	Registry *prometheus.Registry
	// Retention expires evaluation history in the background.
	Retention *retention.Service

	// serving is set by serve: start-up statements are for servers only.
	serving bool
	// promise holds the soft memory limit to the large requests being
	// served (serve only).
	promise  *memoryPromise
	listener net.Listener
	http     *http.Server
	workers  sync.WaitGroup

	// httpListener is the REST share of listener; port splits listener
	// and serves the gRPC share (grpc.go).
	httpListener net.Listener
	port         *sharedPort

	// The health listener of a worker (worker_health.go).
	healthListener net.Listener
	healthServer   *http.Server
	// wrapJobStore, when tests set it, wraps the job store the workers
	// claim from (to hold a claim, say).
	wrapJobStore func(domain.JobStore) domain.JobStore
}

// Open connects the database (migrating it unless told not to) and builds the
// domain services. It is what every CLI command and serve share.
func (m *Main) Open(ctx context.Context, migrate bool) error {
	if m.Clock == nil {
		m.Clock = domain.SystemClock{}
	}
	if m.Log == nil {
		m.Log = newLogger(m.Stderr, m.Config.LogLevel)
	}
	key, err := m.openDatabase(ctx, migrate)
	if err != nil {
		return err
	}
	db := m.DB
	if m.serving {
		warnOpenDataDir(m.Log, m.Config.DataDir)
	}
	m.Keys = access.NewKeyService(persistence.NewKeys(db), m.Accounts, key, m.Clock, m.Config.KeyCacheTTL)
	m.Limiter = access.NewRateLimiter(domain.Limits{RequestsPerSecond: m.Config.RateRPS, Burst: m.Config.RateBurst}, m.Clock)
	m.Registry = prometheus.NewRegistry()
	if err := m.openBackends(); err != nil {
		return err
	}
	backends := m.signalBackends()
	// One cache of compiled plans for every service that evaluates.
	plans := evaluation.NewPlans(planCacheSize)
	m.Labels = labels.NewService(persistence.NewLabels(db), persistence.NewLabelVersions(db), persistence.NewLabelTags(db),
		m.Clock, paging.NewTokens(m.Keys.DeriveSecret("contenteval/page-tokens/labels"))).WithBackends(backends)
	m.Policies = policies.NewService(persistence.NewPolicies(db), m.Clock,
		paging.NewTokens(m.Keys.DeriveSecret("contenteval/page-tokens/policies")),
		policies.Config{MaxTextBytes: m.Config.PolicyMaxTextBytes, ActiveTTL: m.Config.PolicyCacheTTL}, plans)
	m.URLs = safehttp.New(safehttp.Config{AllowPrivate: m.Config.AllowPrivateURLs, MaxBytes: m.Config.ImageMaxBytes})
	pc, err := newPrecheck(m)
	if err != nil {
		return err
	}
	m.Precheck, m.OCR = pc, &ocr.Tesseract{}
	m.HashLists = newHashListService(m, pc)
	images := &precheck.Inspector{Service: pc, OCR: m.OCR, OCRByDefault: m.Config.OCRByDefault,
		Fetch: func(ctx context.Context, url string) ([]byte, error) {
			resp, err := m.URLs.Get(ctx, url)
			if err != nil {
				return nil, err
			}
			return resp.Body, nil
		}}
	m.LabelEvaluation = labels.NewEvaluationService(persistence.NewLabels(db), persistence.NewLabelVersions(db),
		persistence.NewJobs(db), persistence.NewFeedback(db), m.Clock,
		paging.NewTokens(m.Keys.DeriveSecret("contenteval/page-tokens/label-evaluation")),
		labels.EvaluationConfig{MaxTextBytes: m.Config.JobMaxTextBytes, Images: images, HitRanges: persistence.NewLabelHits(db),
			ItemDeadline: m.Config.ItemDeadline, Backends: backends, Plans: plans})
	mcfg, err := mediaConfig(envOS)
	if err != nil {
		return err
	}
	mcfg.DecodeBudget = pc.DecodeBudget()
	// Only a server states its media tools; CLI commands would repeat it on
	// every run.
	mediaLog := m.Log
	if !m.serving {
		mediaLog = slog.New(slog.DiscardHandler)
	}
	mediaAnalyzer := newMediaAnalyzer(mcfg, m.Config.AllowPrivateURLs, m.Clock.Now(), mediaLog)
	m.Jobs = jobs.NewService(m.workerJobStore(db), m.Policies, m.Accounts, m.Clock,
		paging.NewTokens(m.Keys.DeriveSecret("contenteval/page-tokens/jobs")), jobs.Config{
			MaxItems: m.Config.JobMaxItems, MaxTextBytes: m.Config.JobMaxTextBytes, WaitCap: m.Config.JobWaitCap,
			ExecutionDeadline: m.Config.JobExecutionDeadline, AdmissionTimeout: m.Config.JobAdmissionTimeout,
			Lease: m.Config.JobLease, PollInterval: m.Config.JobPollInterval, Concurrency: m.Config.JobWorkers,
			ItemDeadline: m.Config.ItemDeadline, AccountMaxRunning: m.Config.AccountMaxRunning,
			WebhookPoster: m.URLs, Images: images,
			Media: mediaAnalyzer, MediaPrecheck: framePrecheckFor(m.Precheck),
			Backends: backends,
		}, m.Log)
	m.Moderation = moderation.NewService(m.Jobs, m.LabelEvaluation, m.Policies, moderation.Stores{
		Accounts: m.Accounts, Labels: persistence.NewLabels(db), Versions: persistence.NewLabelVersions(db),
		Tags: persistence.NewLabelTags(db),
	}, m.Config.JobMaxItems)
	m.Quality = quality.NewService(quality.Deps{
		Datasets: persistence.NewDatasets(db), Metrics: persistence.NewQualityMetrics(db), Policies: m.Policies,
		Shadows: persistence.NewShadows(db), JobStore: persistence.NewJobs(db), Labels: persistence.NewLabels(db), Versions: persistence.NewLabelVersions(db),
		Jobs: m.Jobs, Images: images, FetchImage: images.Fetch, Clock: m.Clock, Log: m.Log, Backends: backends, Plans: plans,
		Tokens: paging.NewTokens(m.Keys.DeriveSecret("contenteval/page-tokens/quality")),
	}, quality.Config{MaxTextBytes: m.Config.JobMaxTextBytes})
	m.Webhooks = &webhooks.Deliverer{
		Store: persistence.NewWebhooks(db), Payloads: &handlers.WebhookPayloads{Jobs: m.Jobs},
		Poster: m.URLs, Accounts: m.Accounts, Clock: m.Clock, Log: m.Log,
		Owner: m.Jobs.Owner(), Poll: m.Config.WebhookPoll,
	}
	if err := m.openBatches(ctx); err != nil {
		return err
	}
	m.openReview()
	m.openRetention()
	m.registerWorkerMetrics()
	return nil
}

// planCacheSize bounds the compiled plans the server keeps: of the policy
// versions jobs evaluate and of the label versions label evaluation and
// dataset runs evaluate.
const planCacheSize = 2048

// openDatabase opens (unless a test handed one in) and migrates the
// database, and returns the signing key its secrets are sealed with.
func (m *Main) openDatabase(ctx context.Context, migrate bool) (ed25519.PrivateKey, error) {
	if m.DB == nil { // tests hand in a database of their own
		db, err := persistence.Open(ctx, m.Config.DatabaseURL)
		if err != nil {
			return nil, err
		}
		m.DB = db
	}
	db := m.DB
	if migrate {
		if err := db.Migrate(ctx); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	key, err := loadOrCreateSigningKey(m.Config.JWTKeyFile)
	if err != nil {
		return nil, err
	}
	if err := db.EncryptSecretsWith(key); err != nil {
		return nil, err
	}
	m.Accounts = persistence.NewAccounts(db)
	if migrate {
		// Rows from before secrets were sealed; a goose migration cannot do
		// it, the key is not in the database.
		n, err := m.Accounts.SealWebhookSecrets(ctx)
		if err != nil {
			return nil, fmt.Errorf("seal webhook secrets: %w", err)
		}
		if n > 0 {
			m.Log.Info("sealed plaintext webhook secrets", "accounts", n)
		}
	}
	return key, nil
}

// openBackends loads the model backends file, if one is configured.
func (m *Main) openBackends() error {
	if m.Config.BackendsFile == "" {
		return nil
	}
	file, err := modelbackend.LoadFile(m.Config.BackendsFile)
	if err != nil {
		return err
	}
	m.Backends = modelbackend.NewRegistry(file, m.Registry, m.Log)
	if m.serving {
		m.Log.Info("model backends", "file", m.Config.BackendsFile, "backends", m.Backends.Stacks(), "default", file.Default)
	}
	return nil
}

// workerJobStore is the job store the job service claims from.
func (m *Main) workerJobStore(db *persistence.DB) domain.JobStore {
	if m.wrapJobStore != nil {
		return m.wrapJobStore(persistence.NewJobs(db))
	}
	return persistence.NewJobs(db)
}

// signalBackends is the model backends port: nil, not a nil *Registry,
// without a backends file.
func (m *Main) signalBackends() domain.SignalBackends {
	if m.Backends == nil {
		return nil
	}
	return m.Backends
}

// Listen binds the HTTP listener (so tests can learn the port of :0).
func (m *Main) Listen() error {
	// One registry: /metrics shows the REST and the gRPC requests and the
	// model backends.
	registry := m.Registry
	e, err := handlers.New(handlers.Config{BodyLimit: m.Config.BodyLimit, RuleTextMaxBytes: m.Config.PolicyMaxTextBytes, StreamWriteTimeout: m.Config.StreamWriteTimeout}, handlers.Deps{
		Log: m.Log, Keys: m.Keys, Limiter: m.Limiter, Ready: m.DB.Ready,
		Labels:          m.Labels,
		LabelEvaluation: m.LabelEvaluation,
		Policies:        m.Policies, Jobs: m.Jobs, Batches: m.Batches, Quality: m.Quality, PublicURL: m.publicURL,
		Moderation: m.Moderation,
		Review:     m.Review,
		HashLists:  m.HashLists,
		Registry:   registry,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", m.Config.Addr)
	if err != nil {
		return err
	}
	m.listener = ln
	m.http = handlers.HTTPServer(m.Config.Addr, e)
	if m.serving {
		m.promise = newMemoryPromise()
		m.http.Handler = m.promise.wrap(m.http.Handler)
	}
	m.httpListener = m.shareWithGRPC(ln, registry)
	return nil
}

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.listener.Addr().String() }

// Serve runs until ctx is done, then drains requests and stops the workers
// within the shutdown timeout.
func (m *Main) Serve(ctx context.Context) error {
	workerCtx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	m.startWorkers(workerCtx)

	errc := make(chan error, 3)
	if m.http != nil {
		go func() { errc <- m.http.Serve(m.httpListener) }()
		m.port.serve(errc)
		m.Log.Info("serving", "addr", m.Addr(), "role", m.Config.Role, "grpc", !m.Config.NoGRPC)
	}
	if m.healthServer != nil {
		go func() { errc <- m.healthServer.Serve(m.healthListener) }()
		m.Log.Info("serving health checks and metrics", "addr", m.HealthAddr(), "role", m.Config.Role)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
	defer cancel()
	if m.http != nil {
		// REST and gRPC drain at once, within the one timeout.
		grpcDrained := m.port.drain(shutdownCtx)
		if err := m.http.Shutdown(shutdownCtx); err != nil {
			m.Log.Warn("shutdown: requests still running", "error", err.Error())
		}
		if !grpcDrained() {
			m.Log.Warn("shutdown: gRPC calls still running; cut")
		}
	}
	if m.healthServer != nil {
		_ = m.healthServer.Shutdown(shutdownCtx)
	}
	stopWorkers()
	done := make(chan struct{})
	go func() { m.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-shutdownCtx.Done():
		m.Log.Warn("shutdown: workers still running")
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// startWorkers starts the background workers of the roles that run them.
func (m *Main) startWorkers(ctx context.Context) {
	// Jobs run by requests (waitForCompletion, streams) stop with the
	// process in every role.
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
		defer cancel()
		m.Jobs.Shutdown(sctx)
	}()
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		// Both roles check images (the API role runs synchronous jobs).
		m.Precheck.Watch(ctx, hashListPoll)
	}()
	if m.Config.Role == "api" {
		return
	}
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		m.Jobs.RunWorkers(ctx)
	}()
	m.runBatchWorkers(ctx)
	m.runRetention(ctx)
	m.runReviewOffload(ctx)
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		m.Webhooks.Run(ctx)
	}()
}

// Close releases the database.
func (m *Main) Close() error {
	if m.DB != nil {
		return m.DB.Close()
	}
	return nil
}
