package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/contenteval/contenteval/blobstore"
)

// Config is every setting of the server and the CLI. Each has an environment
// variable and a flag; the flag wins. Defaults are what `make run` needs on a
// fresh machine: SQLite under ./data.
type Config struct {
	Addr             string
	HealthAddr       string // a worker's health listener (worker_health.go)
	DataDir          string
	DatabaseURL      string
	JWTKeyFile       string
	AllowPrivateURLs bool
	Role             string
	NoMigrate        bool
	NoGRPC           bool // --grpc=false: no Clavata gRPC service on the REST port
	LogLevel         string
	// PDQHigh/Medium/Low are the precheck's PDQ distance bands.
	PDQHigh, PDQMedium, PDQLow int
	// WebhookPoll is how often the webhook outbox is read when idle.
	WebhookPoll time.Duration
	// OCRByDefault runs OCR on images unless options.options.ocr is "false".
	OCRByDefault bool
	// ImageMaxBytes bounds an image (inline or fetched).
	ImageMaxBytes int64
	// ImageDecodeBudget bounds the decoded pixel buffers of all images at once.
	ImageDecodeBudget int64
	// BackendsFile is the model backends file (docs/operations.md#model-backends); "" evaluates
	// with the built-in evaluators only.
	BackendsFile string

	BodyLimit int64
	// Connections of the port and gRPC receiving (portshare, grpcapi).
	MaxConns             int
	MaxConnsPerClient    int
	ConnStartTimeout     time.Duration
	GRPCMaxReceiving     int
	GRPCConnMaxReceiving int
	RateRPS              float64
	RateBurst            int
	KeyCacheTTL          time.Duration
	ShutdownTimeout      time.Duration

	// Jobs and policies (docs/api.md#limits).
	JobMaxItems          int
	JobMaxTextBytes      int
	JobWaitCap           time.Duration
	JobExecutionDeadline time.Duration
	JobAdmissionTimeout  time.Duration
	JobLease             time.Duration
	JobPollInterval      time.Duration
	JobWorkers           int
	ItemDeadline         time.Duration // fair sharing (docs/operations.md#scaling)
	AccountMaxRunning    int           // fair sharing; 0 is half of JobWorkers
	PolicyMaxTextBytes   int
	PolicyCacheTTL       time.Duration
	// StreamWriteTimeout ends a stream whose client has not taken one
	// line (REST) or message (gRPC) for this long.
	StreamWriteTimeout time.Duration

	// Batch jobs and the blob store (batch.go).
	PublicURL     string
	BatchMaxItems int
	BatchWorkers  int
	BlobStore     string
	S3            blobstore.S3Config

	// Retention of evaluation history (retention.go); 0 keeps everything.
	Retention         time.Duration
	RetentionInterval time.Duration
}

// setting describes one configuration value for the flag set and the README.
type setting struct {
	flag, env, def, help string
	set                  func(c *Config, v string) error
	serveOnly            bool
}

var settings = []setting{
	{"addr", "CONTENTEVAL_ADDR", ":8080", "listen address", func(c *Config, v string) error { c.Addr = v; return nil }, true},
	{"data-dir", "CONTENTEVAL_DATA_DIR", "./data", "directory for the SQLite database, the signing key and blobs", func(c *Config, v string) error { c.DataDir = v; return nil }, false},
	{"database-url", "CONTENTEVAL_DATABASE_URL", "", "postgres://... or sqlite:PATH (default sqlite:$DATA_DIR/contenteval.db)", func(c *Config, v string) error { c.DatabaseURL = v; return nil }, false},
	{"jwt-key-file", "CONTENTEVAL_JWT_KEY_FILE", "", "Ed25519 private key (PEM) signing API keys (default $DATA_DIR/jwt-ed25519.pem, created on first start); share it between replicas", func(c *Config, v string) error { c.JWTKeyFile = v; return nil }, false},
	{"allow-private-urls", "CONTENTEVAL_ALLOW_PRIVATE_URLS", "false", "allow fetching and webhooks to loopback/private addresses (local testing only)", func(c *Config, v string) error { return parseBool(&c.AllowPrivateURLs, v) }, true},
	{"health-addr", "CONTENTEVAL_HEALTH_ADDR", ":8081", "listen address of a --role worker process's /healthz, /readyz and /metrics (no API; other roles serve them on --addr); --health-addr= serves none", func(c *Config, v string) error { c.HealthAddr = v; return nil }, true},
	{"role", "CONTENTEVAL_ROLE", "all", "all (API and workers), api, or worker", func(c *Config, v string) error { c.Role = v; return nil }, true},
	{"grpc", "CONTENTEVAL_GRPC", "true", "serve the Clavata gRPC GatewayService (the official Clavata SDKs) on the same port as REST", func(c *Config, v string) error {
		var on bool
		err := parseBool(&on, v)
		c.NoGRPC = !on
		return err
	}, true},
	{"no-migrate", "CONTENTEVAL_NO_MIGRATE", "false", "do not apply migrations on start", func(c *Config, v string) error { return parseBool(&c.NoMigrate, v) }, true},
	{"log-level", "CONTENTEVAL_LOG_LEVEL", "info", "debug, info, warn or error", func(c *Config, v string) error { c.LogLevel = v; return nil }, false},
	{"body-limit", "CONTENTEVAL_BODY_LIMIT", "33554432", "largest request body in bytes", func(c *Config, v string) error { return parseInt(&c.BodyLimit, v) }, true},
	{"max-conns", "CONTENTEVAL_MAX_CONNS", "1024", "most open connections of the port (0: no limit); more are closed on accept", func(c *Config, v string) error { return parseIntInt(&c.MaxConns, v) }, true},
	{"max-conns-per-client", "CONTENTEVAL_MAX_CONNS_PER_CLIENT", "128", "most open connections of one client address (IPv6: one /64; 0: no limit); behind a proxy every client is the proxy", func(c *Config, v string) error { return parseIntInt(&c.MaxConnsPerClient, v) }, true},
	{"conn-start-timeout", "CONTENTEVAL_CONN_START_TIMEOUT", "5s", "how long a new connection may take to show what it speaks (an HTTP/1 request's first byte, or HTTP/2 up to its first request's headers) before it is closed", func(c *Config, v string) error { return parseDuration(&c.ConnStartTimeout, v) }, true},
	{"grpc-max-receiving", "CONTENTEVAL_GRPC_MAX_RECEIVING", "8", "gRPC request messages the process receives at once; each may be --body-limit bytes, so this bounds their memory; more wait", func(c *Config, v string) error { return parseIntInt(&c.GRPCMaxReceiving, v) }, true},
	{"grpc-conn-max-receiving", "CONTENTEVAL_GRPC_CONN_MAX_RECEIVING", "2", "gRPC request messages one connection sends at once; more wait", func(c *Config, v string) error { return parseIntInt(&c.GRPCConnMaxReceiving, v) }, true},
	{"rate-rps", "CONTENTEVAL_RATE_RPS", "50", "default per-account requests per second (0: unlimited)", func(c *Config, v string) error { return parseFloat(&c.RateRPS, v) }, true},
	{"rate-burst", "CONTENTEVAL_RATE_BURST", "100", "default per-account burst", func(c *Config, v string) error { return parseIntInt(&c.RateBurst, v) }, true},
	{"key-cache-ttl", "CONTENTEVAL_KEY_CACHE_TTL", "5s", "how long a verified API key is trusted before re-reading it (bounds how late a revocation made elsewhere applies)", func(c *Config, v string) error { return parseDuration(&c.KeyCacheTTL, v) }, true},
	{"shutdown-timeout", "CONTENTEVAL_SHUTDOWN_TIMEOUT", "30s", "how long shutdown waits for requests and workers", func(c *Config, v string) error { return parseDuration(&c.ShutdownTimeout, v) }, true},
	{"job-max-items", "CONTENTEVAL_JOB_MAX_ITEMS", "100", "most contentData entries in one job", func(c *Config, v string) error { return parseIntInt(&c.JobMaxItems, v) }, true},
	{"job-max-text-bytes", "CONTENTEVAL_JOB_MAX_TEXT_BYTES", "262144", "largest text entry of a job, in bytes", func(c *Config, v string) error { return parseIntInt(&c.JobMaxTextBytes, v) }, true},
	{"job-wait-cap", "CONTENTEVAL_JOB_WAIT_CAP", "30s", "longest a waitForCompletion request waits before answering with the unfinished job", func(c *Config, v string) error { return parseDuration(&c.JobWaitCap, v) }, true},
	{"job-execution-deadline", "CONTENTEVAL_JOB_EXECUTION_DEADLINE", "15m", "longest a job may run from its first start (then JOB_ERROR_REASON_EXECUTION_DEADLINE_EXCEEDED)", func(c *Config, v string) error { return parseDuration(&c.JobExecutionDeadline, v) }, true},
	{"job-admission-timeout", "CONTENTEVAL_JOB_ADMISSION_TIMEOUT", "10m", "longest a queued job may wait to start (then JOB_ERROR_REASON_ADMISSION_QUEUE_TIMEOUT)", func(c *Config, v string) error { return parseDuration(&c.JobAdmissionTimeout, v) }, true},
	{"job-lease", "CONTENTEVAL_JOB_LEASE", "30s", "how long a worker holds a job without renewing; a crashed worker's jobs are re-claimed after it", func(c *Config, v string) error { return parseDuration(&c.JobLease, v) }, true},
	{"job-poll-interval", "CONTENTEVAL_JOB_POLL_INTERVAL", "250ms", "how often an idle worker looks for queued jobs", func(c *Config, v string) error { return parseDuration(&c.JobPollInterval, v) }, true},
	{"job-workers", "CONTENTEVAL_JOB_WORKERS", "8", "queued jobs one process runs at once (roles all and worker)", func(c *Config, v string) error { return parseIntInt(&c.JobWorkers, v) }, true},
	{"item-deadline", "CONTENTEVAL_ITEM_DEADLINE", "30s", "longest one content item's evaluation may take (then its job fails with JOB_ERROR_REASON_EXECUTION_DEADLINE_EXCEEDED)", func(c *Config, v string) error { return parseDuration(&c.ItemDeadline, v) }, true},
	{"account-max-running", "CONTENTEVAL_ACCOUNT_MAX_RUNNING", "0", "most of this process's job workers one account holds while another account has queued jobs (0: half of --job-workers, at least 1)", func(c *Config, v string) error { return parseIntInt(&c.AccountMaxRunning, v) }, true},
	{"stream-write-timeout", "CONTENTEVAL_STREAM_WRITE_TIMEOUT", "2m", "longest a job stream waits for its client to take one result; a client that stops reading has its stream ended and its job canceled", func(c *Config, v string) error { return parseDuration(&c.StreamWriteTimeout, v) }, true},
	{"policy-max-text-bytes", "CONTENTEVAL_POLICY_MAX_TEXT_BYTES", "65536", "largest policy rule text, in bytes", func(c *Config, v string) error { return parseIntInt(&c.PolicyMaxTextBytes, v) }, true},
	{"policy-cache-ttl", "CONTENTEVAL_POLICY_CACHE_TTL", "1s", "how long a policy read for a job is reused (0: read it for every job); bounds how late a new version or a disable made on another replica applies, this replica's own changes apply at once", func(c *Config, v string) error { return parseDuration(&c.PolicyCacheTTL, v) }, true},
	{"pdq-bands", "CONTENTEVAL_PDQ_BANDS", "10,20,31", "PDQ Hamming distances of the HIGH,MEDIUM,LOW precheck bands", parsePDQBands, false},
	{"webhook-poll-interval", "CONTENTEVAL_WEBHOOK_POLL_INTERVAL", "1s", "how often an idle webhook deliverer reads the outbox", func(c *Config, v string) error { return parseDuration(&c.WebhookPoll, v) }, true},
	{"ocr", "CONTENTEVAL_OCR", "false", "run OCR (tesseract) on images by default; options.options.ocr overrides per job", func(c *Config, v string) error { return parseBool(&c.OCRByDefault, v) }, true},
	{"image-max-bytes", "CONTENTEVAL_IMAGE_MAX_BYTES", "20971520", "largest image, inline or fetched, in bytes", func(c *Config, v string) error { return parseInt(&c.ImageMaxBytes, v) }, true},
	{"backends-file", "CONTENTEVAL_BACKENDS_FILE", "", "YAML file of the model backends that score concept, question and context signals (README: Model backends); none: built-in evaluators only", func(c *Config, v string) error { c.BackendsFile = v; return nil }, true},
	{"image-decode-budget", "CONTENTEVAL_IMAGE_DECODE_BUDGET", "1073741824", "bytes of decoded pixels all images being checked may hold at once; decodes beyond it wait, and an image larger than it fails", func(c *Config, v string) error { return parseInt(&c.ImageDecodeBudget, v) }, true},
}

// bindConfig registers the settings on fs (only the common ones unless
// serve) and returns a function that resolves env, defaults and flags.
func bindConfig(fs *flag.FlagSet, serve bool, getenv func(string) string) func() (Config, error) {
	values := map[string]*string{}
	for _, s := range settings {
		if s.serveOnly && !serve {
			continue
		}
		v := s.def
		if e := getenv(s.env); e != "" {
			v = e
		}
		p := new(string)
		*p = v
		values[s.flag] = p
		if s.def == "true" || s.def == "false" {
			// A bool setting: --flag alone means --flag=true, as for the
			// standard library's bool flags.
			fs.Var(boolFlag{p}, s.flag, s.help+" ($"+s.env+")")
		} else {
			fs.StringVar(p, s.flag, v, s.help+" ($"+s.env+")")
		}
	}
	return func() (Config, error) {
		var c Config
		for _, s := range settings {
			v := s.def
			if p, ok := values[s.flag]; ok {
				v = *p
			} else if e := getenv(s.env); e != "" {
				v = e
			}
			if err := s.set(&c, v); err != nil {
				return c, fmt.Errorf("--%s: %w", s.flag, err)
			}
		}
		return c, c.validate()
	}
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = "sqlite:" + filepath.Join(c.DataDir, "contenteval.db")
	}
	if !strings.HasPrefix(c.DatabaseURL, "sqlite:") && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return errors.New("--database-url: want postgres://... or sqlite:PATH")
	}
	if c.JWTKeyFile == "" {
		c.JWTKeyFile = filepath.Join(c.DataDir, "jwt-ed25519.pem")
	}
	switch c.Role {
	case "all", "api", "worker":
	default:
		return fmt.Errorf("--role: %q is not all, api or worker", c.Role)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level: %q is not debug, info, warn or error", c.LogLevel)
	}
	if c.BodyLimit < 1024 {
		return errors.New("--body-limit: must be at least 1024 bytes")
	}
	if c.MaxConns < 0 || c.MaxConnsPerClient < 0 {
		return errors.New("--max-conns and --max-conns-per-client must not be negative")
	}
	if c.ConnStartTimeout <= 0 {
		return errors.New("--conn-start-timeout must be positive")
	}
	if c.GRPCMaxReceiving < 1 || c.GRPCConnMaxReceiving < 1 {
		return errors.New("--grpc-max-receiving and --grpc-conn-max-receiving must be at least 1")
	}
	if c.RateRPS < 0 || c.RateBurst < 0 {
		return errors.New("--rate-rps and --rate-burst must not be negative")
	}
	if c.RateRPS > 0 && c.RateBurst < 1 {
		return errors.New("--rate-burst must be at least 1 when --rate-rps is set")
	}
	if c.JobMaxItems < 1 || c.JobMaxTextBytes < 1 || c.JobWorkers < 1 || c.PolicyMaxTextBytes < 1 {
		return errors.New("--job-max-items, --job-max-text-bytes, --job-workers and --policy-max-text-bytes must be at least 1")
	}
	if c.JobWaitCap <= 0 || c.JobExecutionDeadline <= 0 || c.JobAdmissionTimeout <= 0 || c.JobPollInterval <= 0 {
		return errors.New("--job-wait-cap, --job-execution-deadline, --job-admission-timeout and --job-poll-interval must be positive")
	}
	if c.StreamWriteTimeout <= 0 {
		return errors.New("--stream-write-timeout must be positive")
	}
	if c.ItemDeadline <= 0 {
		return errors.New("--item-deadline must be positive")
	}
	if c.AccountMaxRunning < 0 {
		return errors.New("--account-max-running must not be negative")
	}
	if c.JobLease < time.Second {
		return errors.New("--job-lease must be at least 1s")
	}
	if c.ImageDecodeBudget < 1 {
		return errors.New("--image-decode-budget must be at least 1 byte")
	}
	if err := validateBatchConfig(c); err != nil {
		return err
	}
	return nil
}

// boolFlag is a bool setting's flag. It keeps the text, which the setting
// parses with the others so a bad value is reported the same way.
type boolFlag struct{ v *string }

func (b boolFlag) String() string {
	if b.v == nil {
		return ""
	}
	return *b.v
}

func (b boolFlag) Set(v string) error { *b.v = v; return nil }

// IsBoolFlag lets the flag package accept the flag without a value.
func (b boolFlag) IsBoolFlag() bool { return true }

// Type names the value in cobra's help (a bool flag shows no value).
func (b boolFlag) Type() string { return "bool" }

func parseBool(dst *bool, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	*dst = b
	return nil
}

func parseInt(dst *int64, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", v)
	}
	*dst = n
	return nil
}

func parseIntInt(dst *int, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not an integer", v)
	}
	*dst = n
	return nil
}

func parseFloat(dst *float64, v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", v)
	}
	*dst = f
	return nil
}

func parseDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("%q is not a duration such as 5s or 720h", v)
	}
	*dst = d
	return nil
}

// envOS reads the real environment.
func envOS(k string) string { return os.Getenv(k) }

func parsePDQBands(c *Config, v string) error {
	var h, m, l int
	if n, err := fmt.Sscanf(v, "%d,%d,%d", &h, &m, &l); n != 3 || err != nil || h < 0 || h > m || m > l || l > 256 {
		return fmt.Errorf("%q is not HIGH,MEDIUM,LOW with 0 <= HIGH <= MEDIUM <= LOW <= 256", v)
	}
	c.PDQHigh, c.PDQMedium, c.PDQLow = h, m, l
	return nil
}
