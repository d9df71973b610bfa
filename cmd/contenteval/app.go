package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/domain/batches"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/quality"
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
	// Quality serves dataset examples and runs, live metrics and shadow
	// versions, and runs their queued work (DESIGN §12).
	Quality *quality.Service
	Blobs   domain.BlobStore
	// URLs fetches customer URLs (images, media) and posts webhooks under
	// the address rules of DESIGN §5.
	URLs     *safehttp.Client
	Webhooks *webhooks.Deliverer
	// Precheck holds the hash lists every image is checked against.
	Precheck *precheck.Service
	OCR      *ocr.Tesseract
	// Backends are the model backends of --backends-file (nil without).
	Backends *modelbackend.Registry
	Registry *prometheus.Registry

	// serving is set by serve: start-up statements are for servers only.
	serving  bool
	listener net.Listener
	http     *http.Server
	workers  sync.WaitGroup

	// httpListener is the REST share of listener; port serves the gRPC
	// share (grpc.go), nil with --grpc=false.
	httpListener net.Listener
	port         *sharedPort
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
	if m.DB == nil { // tests hand in a database of their own
		db, err := persistence.Open(ctx, m.Config.DatabaseURL)
		if err != nil {
			return err
		}
		m.DB = db
	}
	db := m.DB
	if migrate {
		if err := db.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	key, err := loadOrCreateSigningKey(m.Config.JWTKeyFile)
	if err != nil {
		return err
	}
	if err := db.EncryptSecretsWith(key); err != nil {
		return err
	}
	m.Accounts = persistence.NewAccounts(db)
	if migrate {
		// Rows from before secrets were sealed; a goose migration cannot do
		// it, the key is not in the database.
		n, err := m.Accounts.SealWebhookSecrets(ctx)
		if err != nil {
			return fmt.Errorf("seal webhook secrets: %w", err)
		}
		if n > 0 {
			m.Log.Info("sealed plaintext webhook secrets", "accounts", n)
		}
	}
	if m.serving {
		warnOpenDataDir(m.Log, m.Config.DataDir)
	}
	m.Keys = access.NewKeyService(persistence.NewKeys(db), m.Accounts, key, m.Clock, m.Config.KeyCacheTTL)
	m.Limiter = access.NewRateLimiter(domain.Limits{RequestsPerSecond: m.Config.RateRPS, Burst: m.Config.RateBurst}, m.Clock)
	m.Registry = prometheus.NewRegistry()
	if m.Config.BackendsFile != "" {
		file, err := modelbackend.LoadFile(m.Config.BackendsFile)
		if err != nil {
			return err
		}
		m.Backends = modelbackend.NewRegistry(file, m.Registry, m.Log)
		if m.serving {
			m.Log.Info("model backends", "file", m.Config.BackendsFile, "backends", m.Backends.Stacks(), "default", file.Default)
		}
	}
	backends := m.signalBackends()
	m.Labels = labels.NewService(persistence.NewLabels(db), persistence.NewLabelVersions(db), persistence.NewLabelTags(db),
		m.Clock, domain.NewPageTokens(m.Keys.DeriveSecret("contenteval/page-tokens/labels"))).WithBackends(backends)
	m.Policies = policies.NewService(persistence.NewPolicies(db), m.Clock,
		domain.NewPageTokens(m.Keys.DeriveSecret("contenteval/page-tokens/policies")),
		policies.Config{MaxTextBytes: m.Config.PolicyMaxTextBytes, ActiveTTL: m.Config.PolicyCacheTTL}, nil)
	m.URLs = safehttp.New(safehttp.Config{AllowPrivate: m.Config.AllowPrivateURLs, MaxBytes: m.Config.ImageMaxBytes})
	pc, err := newPrecheck(m)
	if err != nil {
		return err
	}
	m.Precheck, m.OCR = pc, &ocr.Tesseract{}
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
		domain.NewPageTokens(m.Keys.DeriveSecret("contenteval/page-tokens/label-evaluation")),
		labels.EvaluationConfig{MaxTextBytes: m.Config.JobMaxTextBytes, Images: images, HitRanges: persistence.NewLabelHits(db),
			ItemDeadline: m.Config.ItemDeadline, Backends: backends})
	mcfg, err := mediaConfig(envOS)
	if err != nil {
		return err
	}
	// Only a server states its media tools; CLI commands would repeat it on
	// every run.
	mediaLog := m.Log
	if !m.serving {
		mediaLog = slog.New(slog.DiscardHandler)
	}
	mediaAnalyzer := newMediaAnalyzer(mcfg, m.Config.AllowPrivateURLs, m.Clock.Now(), mediaLog)
	m.Jobs = jobs.NewService(persistence.NewJobs(db), m.Policies, m.Accounts, m.Clock,
		domain.NewPageTokens(m.Keys.DeriveSecret("contenteval/page-tokens/jobs")), jobs.Config{
			MaxItems: m.Config.JobMaxItems, MaxTextBytes: m.Config.JobMaxTextBytes, WaitCap: m.Config.JobWaitCap,
			ExecutionDeadline: m.Config.JobExecutionDeadline, AdmissionTimeout: m.Config.JobAdmissionTimeout,
			Lease: m.Config.JobLease, PollInterval: m.Config.JobPollInterval, Concurrency: m.Config.JobWorkers,
			ItemDeadline: m.Config.ItemDeadline, AccountMaxRunning: m.Config.AccountMaxRunning,
			WebhookPoster: m.URLs, Images: images,
			Media: mediaAnalyzer, MediaPrecheck: framePrecheckFor(m.Precheck),
			Backends: backends,
		}, m.Log)
	m.Quality = quality.NewService(quality.Deps{
		Datasets: persistence.NewDatasets(db), Metrics: persistence.NewQualityMetrics(db), Policies: m.Policies,
		Shadows: persistence.NewShadows(db), JobStore: persistence.NewJobs(db), Labels: persistence.NewLabels(db), Versions: persistence.NewLabelVersions(db),
		Jobs: m.Jobs, Images: images, FetchImage: images.Fetch, Clock: m.Clock, Log: m.Log, Backends: backends,
		Tokens: domain.NewPageTokens(m.Keys.DeriveSecret("contenteval/page-tokens/quality")),
	}, quality.Config{MaxTextBytes: m.Config.JobMaxTextBytes})
	m.Webhooks = &webhooks.Deliverer{
		Store: persistence.NewWebhooks(db), Payloads: &handlers.WebhookPayloads{Jobs: m.Jobs},
		Poster: m.URLs, Accounts: m.Accounts, Clock: m.Clock, Log: m.Log,
		Owner: m.Jobs.Owner(), Poll: m.Config.WebhookPoll,
	}
	if err := m.openBatches(ctx); err != nil {
		return err
	}
	return nil
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
	e, err := handlers.New(handlers.Config{BodyLimit: m.Config.BodyLimit, RuleTextMaxBytes: m.Config.PolicyMaxTextBytes}, handlers.Deps{
		Log: m.Log, Keys: m.Keys, Limiter: m.Limiter, Ready: m.DB.Ready,
		Labels:          m.Labels,
		LabelEvaluation: m.LabelEvaluation,
		Policies:        m.Policies, Jobs: m.Jobs, Batches: m.Batches, Quality: m.Quality, PublicURL: m.publicURL,
		Registry: registry,
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
		m.Log.Info("serving", "addr", m.Addr(), "role", m.Config.Role, "grpc", m.port != nil)
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
		m.Precheck.Watch(ctx, 10*time.Second)
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

// bootstrap creates the first account and key on an empty database and
// prints the key once: `make run` must give a usable key with no other setup.
func (m *Main) bootstrap(ctx context.Context) error {
	n, err := m.Accounts.CountAccounts(ctx)
	if err != nil || n > 0 {
		return err
	}
	a, err := createAccount(ctx, m, "default", domain.AccountLabelFirst)
	if err != nil {
		return err
	}
	_, token, err := m.Keys.Issue(ctx, a.ID, "bootstrap", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, `
First start: created account %q (%s, id %s) and this API key. It is shown once:

  %s

Try:  curl -H "Authorization: Bearer <key>" http://localhost%s/v1/labels
A policy-first account (for /v1/jobs and /v1/policies):
  contenteval accounts create --name NAME --type policy-first
  contenteval keys create --account ACCOUNT_ID

`, a.Name, a.Type, a.ID, token, portOf(m.Config.Addr))
	return nil
}

func portOf(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return ":" + port
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	if w == nil {
		w = os.Stderr
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// loadOrCreateSigningKey reads the Ed25519 key (PKCS#8 PEM), creating it with
// mode 0600 when the file does not exist yet.
func loadOrCreateSigningKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, priv, gerr := ed25519.GenerateKey(rand.Reader)
		if gerr != nil {
			return nil, gerr
		}
		der, merr := x509.MarshalPKCS8PrivateKey(priv)
		if merr != nil {
			return nil, merr
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
		f, cerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(cerr, fs.ErrExist) {
			return loadOrCreateSigningKey(path) // another process won the race
		}
		if cerr != nil {
			return nil, fmt.Errorf("signing key: %w", cerr)
		}
		defer f.Close()
		if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
		return priv, f.Sync()
	}
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("signing key %s: not PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s: not an Ed25519 key", path)
	}
	return priv, nil
}

// warnOpenDataDir warns when others may enter the data directory. The
// files in it are created 0600 and a directory created here is 0700, but an
// existing one is the operator's: it is not narrowed behind their back.
func warnOpenDataDir(log *slog.Logger, dir string) {
	fi, err := os.Stat(dir)
	if err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the data directory is open to other users; chmod 700 it", "mode", fmt.Sprintf("%#o", fi.Mode().Perm()))
	}
}

func persistenceKeys(m *Main) *persistence.Keys { return persistence.NewKeys(m.DB) }
