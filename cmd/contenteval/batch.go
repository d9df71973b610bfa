package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/contenteval/contenteval/blobstore"
	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/batches"
	"github.com/contenteval/contenteval/handlers"
	"github.com/contenteval/contenteval/persistence"
)

// batchSettings are the configuration of batch jobs and the blob store
// (docs/operations.md#object-store-s3).
var batchSettings = []setting{
	{"public-url", "CONTENTEVAL_PUBLIC_URL", "", "external base URL of the API (https://api.example.com), the prefix of signed batch upload/download URLs (default http://<listen address>)", func(c *Config, v string) error { c.PublicURL = v; return nil }, false},
	{"batch-max-items", "CONTENTEVAL_BATCH_MAX_ITEMS", "25000", "most items in one batch input file", func(c *Config, v string) error { return parseIntInt(&c.BatchMaxItems, v) }, false},
	{"batch-workers", "CONTENTEVAL_BATCH_WORKERS", "2", "batch jobs one process drives at once (roles all and worker)", func(c *Config, v string) error { return parseIntInt(&c.BatchWorkers, v) }, false},
	{"blob-store", "CONTENTEVAL_BLOB_STORE", "local", "where batch files live: local ($DATA_DIR/blobs) or s3 (for several replicas)", func(c *Config, v string) error { c.BlobStore = v; return nil }, false},
	{"s3-endpoint", "CONTENTEVAL_S3_ENDPOINT", "", "S3-compatible endpoint URL (empty: AWS)", func(c *Config, v string) error { c.S3.Endpoint = v; return nil }, false},
	{"s3-region", "CONTENTEVAL_S3_REGION", "us-east-1", "S3 region", func(c *Config, v string) error { c.S3.Region = v; return nil }, false},
	{"s3-bucket", "CONTENTEVAL_S3_BUCKET", "", "S3 bucket of batch files", func(c *Config, v string) error { c.S3.Bucket = v; return nil }, false},
	{"s3-access-key", "CONTENTEVAL_S3_ACCESS_KEY", "", "S3 access key id", func(c *Config, v string) error { c.S3.AccessKey = v; return nil }, false},
	{"s3-secret-key", "CONTENTEVAL_S3_SECRET_KEY", "", "S3 secret access key (prefer the environment variable to the flag)", func(c *Config, v string) error { c.S3.SecretKey = v; return nil }, false},
	{"s3-prefix", "CONTENTEVAL_S3_PREFIX", "contenteval/", "key prefix inside the bucket", func(c *Config, v string) error { c.S3.Prefix = v; return nil }, false},
	{"s3-path-style", "CONTENTEVAL_S3_PATH_STYLE", "true", "address the bucket as ENDPOINT/BUCKET (most self-hosted stores need it)", func(c *Config, v string) error { return parseBool(&c.S3.PathStyle, v) }, false},
}

// validateBatchConfig checks the batch settings.
func validateBatchConfig(c *Config) error {
	if c.BatchMaxItems < 1 || c.BatchWorkers < 1 {
		return errors.New("--batch-max-items and --batch-workers must be at least 1")
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("--public-url: want http(s)://host[:port]")
		}
	}
	switch c.BlobStore {
	case "local":
	case "s3":
		if c.S3.Bucket == "" || c.S3.AccessKey == "" || c.S3.SecretKey == "" {
			return errors.New("--blob-store=s3 needs --s3-bucket, --s3-access-key and --s3-secret-key")
		}
	default:
		return fmt.Errorf("--blob-store: %q is not local or s3", c.BlobStore)
	}
	return nil
}

// openBatches builds the blob store and the batch service.
func (m *Main) openBatches(ctx context.Context) error {
	if m.Blobs == nil { // tests may hand in a store of their own
		switch m.Config.BlobStore {
		case "s3":
			cfg := m.Config.S3
			s, err := blobstore.NewS3(cfg)
			if err != nil {
				return err
			}
			bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := s.EnsureBucket(bctx); err != nil {
				return fmt.Errorf("blob store: %w", err)
			}
			m.Blobs = s
		default:
			l, err := blobstore.NewLocal(filepath.Join(m.Config.DataDir, "blobs"))
			if err != nil {
				return err
			}
			m.Blobs = l
		}
	}
	out := &handlers.BatchOutput{PublicURL: m.publicURL}
	var poster domain.WebhookPoster
	if m.URLs != nil {
		poster = m.URLs
	}
	m.Batches = batches.NewService(batches.Deps{
		Store: persistence.NewBatchJobs(m.DB), Blobs: m.Blobs, Jobs: persistence.NewJobs(m.DB), JobQueue: m.Jobs,
		Policies: m.Policies, Clock: m.Clock, Poster: poster, Lines: out, Log: m.Log, Backends: m.signalBackends(),
		Signer: batches.NewURLSigner(m.Keys.DeriveSecret("contenteval/signed-urls/batch-jobs")),
	}, batches.Config{
		MaxItems: m.Config.BatchMaxItems, MaxTextBytes: m.Config.JobMaxTextBytes,
		MaxLineBytes: int(min(m.Config.BodyLimit, 1<<30)), Lease: m.Config.JobLease,
		PollInterval: m.Config.JobPollInterval, Concurrency: m.Config.BatchWorkers,
	})
	out.Batches = m.Batches
	if m.Webhooks != nil {
		if p, ok := m.Webhooks.Payloads.(*handlers.WebhookPayloads); ok {
			if p.Others == nil {
				p.Others = map[string]func(context.Context, *domain.WebhookEvent) ([]byte, error){}
			}
			p.Others["batch_job"] = out.RenderBatchWebhook
		}
	}
	return nil
}

// publicURL is the external base URL: the setting, or the address the
// server listens on.
func (m *Main) publicURL() string {
	if m.Config.PublicURL != "" {
		return strings.TrimRight(m.Config.PublicURL, "/")
	}
	addr := m.Config.Addr
	if m.listener != nil {
		addr = m.listener.Addr().String()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// runBatchWorkers drives batch jobs until ctx ends (roles all and worker).
func (m *Main) runBatchWorkers(ctx context.Context) {
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		m.Batches.RunWorkers(ctx)
	}()
}

// The batch settings join the others (flags, environment, README table).
func init() { settings = append(settings, batchSettings...) }
