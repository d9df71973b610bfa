package batches

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/webhooks"
)

// Config are the limits and timings of batch jobs (docs/api.md#limits),
// validated by cmd.
type Config struct {
	MaxItems      int           // items per input file (25,000)
	MaxTextBytes  int           // bytes of one text item (the jobs' limit)
	MaxLineBytes  int           // bytes of one JSON line (32 MiB)
	URLValidity   time.Duration // signed upload/download URLs (4 h)
	Lease         time.Duration // a batch worker's hold on a batch
	PollInterval  time.Duration // idle poll, and progress refresh while evaluating
	Concurrency   int           // batches one process drives at once
	SubmitWorkers int           // parallel job inserts while submitting
	ItemsPerJob   int           // consecutive text items one job evaluates (25)
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.MaxItems <= 0 {
		c.MaxItems = 25000
	}
	if c.MaxTextBytes <= 0 {
		c.MaxTextBytes = 256 << 10
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = 32 << 20
	}
	def(&c.URLValidity, 4*time.Hour)
	def(&c.Lease, 30*time.Second)
	def(&c.PollInterval, 250*time.Millisecond)
	if c.Concurrency <= 0 {
		c.Concurrency = 2
	}
	if c.SubmitWorkers <= 0 {
		c.SubmitWorkers = 8
	}
	if c.ItemsPerJob <= 0 {
		c.ItemsPerJob = 25
	}
	return c
}

// LineEncoder renders one line of a batch output file (the API shape
// of the item's result, which only the API adapter knows), without the
// trailing newline.
type LineEncoder interface {
	EncodeBatchLine(b *domain.BatchJob, o *domain.BatchOutcome) ([]byte, error)
}

// Deps are what the batch service works with; cmd wires them.
type Deps struct {
	Store    domain.BatchStore
	Blobs    domain.BlobStore
	Jobs     domain.JobStore
	JobQueue *jobs.Service // woken when items are enqueued
	Policies *policies.Service
	Clock    domain.Clock
	Signer   *URLSigner
	// Poster validates webhook URLs (docs/api.md#url-fetching); nil skips the check.
	Poster domain.WebhookPoster
	Lines  LineEncoder
	Log    *slog.Logger
	// Backends are the model backends options.options.stack may name
	// (nil: the built-in evaluators only).
	Backends domain.SignalBackends
}

// Service creates, lists and cancels batch jobs, receives and serves
// their files through signed URLs, and runs the batch workers.
type Service struct {
	d      Deps
	cfg    Config
	owner  string
	direct bool // the blob store makes its own URLs (S3)
	wake   chan struct{}
}

// NewService returns the batch service.
func NewService(d Deps, cfg Config) *Service {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	s := &Service{d: d, cfg: cfg.withDefaults(), owner: domain.NewID(), wake: make(chan struct{}, 1)}
	_, s.direct, _ = d.Blobs.PresignURL(context.Background(), http.MethodPut, "probe", d.Clock.Now().Add(time.Hour))
	return s
}

// Owner is this process's lease owner id for batches.
func (s *Service) Owner() string { return s.owner }

// CreateRequest is the body of POST /v1/batch-jobs.
type CreateRequest struct {
	Name       string
	PolicyID   string
	WebhookURL string
	// Options go to every item's job, as a job's options.options do.
	Options map[string]string
}

// Create records a batch job against the active version of the policy and
// returns it with the link its input file is uploaded to. A policy that does not exist or is
// disabled is not a request error (the contract: the response carries `error`):
// the batch is recorded in BatchError with BATCH_JOB_ERROR_INVALID_POLICY,
// so its id can be listed like any other, and no upload link is returned.
// Codes: INVALID_ARGUMENT (webhookUrl, policyId, name).
func (s *Service) Create(ctx context.Context, account *domain.Account, req CreateRequest) (*domain.BatchJob, *FileLink, error) {
	if req.PolicyID == "" {
		return nil, nil, domain.InvalidField("policyId", "is required")
	}
	if len(req.Name) > 200 {
		return nil, nil, domain.InvalidField("name", "is longer than 200 characters")
	}
	if req.WebhookURL != "" && s.d.Poster != nil {
		if err := webhooks.ValidateTarget(s.d.Poster, "webhookUrl", req.WebhookURL, nil); err != nil {
			return nil, nil, err
		}
	}
	if err := evaluation.CheckStack(s.d.Backends, "options.options.stack", req.Options[domain.StackOption]); err != nil {
		return nil, nil, err
	}
	now := s.d.Clock.Now()
	b := &domain.BatchJob{
		ID: domain.NewID(), AccountID: account.ID, Name: req.Name, PolicyID: req.PolicyID, WebhookURL: req.WebhookURL,
		State: domain.BatchInitialized, Created: now, Updated: now, Options: req.Options,
	}
	p, v, _, err := s.d.Policies.ActivePlan(ctx, account.ID, req.PolicyID)
	switch code := domain.ErrorCode(err); {
	case err == nil:
		b.PolicyKey, b.PolicyVersionID = p.Key, v.ID
	case code == domain.NotFound && !policyExists(ctx, s.d.Policies, account.ID, req.PolicyID):
		b.State, b.ErrorCode, b.ErrorMessage = domain.BatchError, domain.BatchErrInvalidPolicy, "policy "+quote(req.PolicyID)+" not found"
	case code == domain.NotFound:
		b.State, b.ErrorCode, b.ErrorMessage = domain.BatchError, domain.BatchErrInvalidPolicyVersion, "the active version of policy "+quote(req.PolicyID)+" was not found"
	case code == domain.FailedPrecondition:
		b.State, b.ErrorCode, b.ErrorMessage = domain.BatchError, domain.BatchErrInvalidPolicy, domain.ErrorMessage(err)
	default:
		return nil, nil, err
	}
	if b.State == domain.BatchError {
		b.Completed = &now
	}
	if err := s.d.Store.CreateBatch(ctx, b); err != nil {
		return nil, nil, err
	}
	if b.State == domain.BatchError {
		return b, nil, nil
	}
	l, err := s.uploadLink(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	return b, l, nil
}

func policyExists(ctx context.Context, ps *policies.Service, accountID, id string) bool {
	_, err := ps.Get(ctx, &domain.Account{ID: accountID}, id)
	return err == nil
}

func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "'") + "\"" }

// FileLink is how a client reaches a batch's file: the blob store's
// own presigned URL when it makes them (S3), otherwise the API's file
// endpoint of the batch (PUT input, GET output) with Query, which signs it.
// The handlers make it a URL: the API's paths and external address are
// theirs.
type FileLink struct {
	Presigned string
	BatchID   string
	Query     url.Values
}

// uploadLink is where the client PUTs the input file.
func (s *Service) uploadLink(ctx context.Context, b *domain.BatchJob) (*FileLink, error) {
	exp := s.d.Clock.Now().Add(s.cfg.URLValidity)
	if s.direct {
		u, ok, err := s.d.Blobs.PresignURL(ctx, http.MethodPut, batchDirectInputKey(b.ID), exp)
		if err != nil {
			return nil, err
		}
		if ok {
			return &FileLink{Presigned: u, BatchID: b.ID}, nil
		}
	}
	return &FileLink{BatchID: b.ID, Query: s.d.Signer.Sign(http.MethodPut, b.ID, exp)}, nil
}

// OutputLink returns where a completed batch's output file is read, valid
// for the URL validity from now, or nil when b is not completed.
func (s *Service) OutputLink(ctx context.Context, b *domain.BatchJob) *FileLink {
	if b.State != domain.BatchCompleted || b.OutputKey == "" {
		return nil
	}
	exp := s.d.Clock.Now().Add(s.cfg.URLValidity)
	if s.direct {
		u, ok, err := s.d.Blobs.PresignURL(ctx, http.MethodGet, b.OutputKey, exp)
		if err == nil && ok {
			return &FileLink{Presigned: u, BatchID: b.ID}
		}
	}
	return &FileLink{BatchID: b.ID, Query: s.d.Signer.Sign(http.MethodGet, b.ID, exp)}
}

// Get returns a batch of the account. Codes: NOT_FOUND.
func (s *Service) Get(ctx context.Context, account *domain.Account, id string) (*domain.BatchJob, error) {
	return s.d.Store.GetBatch(ctx, account.ID, id)
}

// GetByID returns a batch of any account (webhook rendering). Codes:
// NOT_FOUND.
func (s *Service) GetByID(ctx context.Context, id string) (*domain.BatchJob, error) {
	return s.d.Store.GetBatchByID(ctx, id)
}

// maxBatchList is how many batches one listing returns (openapi.yaml).
const maxBatchList = 1000

// List returns the account's batches matching f, newest first, at most
// 1000. Codes: INVALID_ARGUMENT (unknown state).
func (s *Service) List(ctx context.Context, account *domain.Account, f domain.BatchFilter) ([]*domain.BatchJob, error) {
	for _, st := range f.States {
		if !st.Valid() {
			return nil, domain.InvalidField("states", "unknown state")
		}
	}
	if len(f.IDs) > maxBatchList {
		return nil, domain.InvalidField("batchJobIds", "at most 1000 ids")
	}
	return s.d.Store.ListBatches(ctx, account.ID, f, maxBatchList)
}

// Cancel stops a batch: a non-terminal batch becomes BatchCancelled (its
// pending item jobs are cancelled and the webhook is enqueued with it); a
// terminal one is returned unchanged. Codes: NOT_FOUND.
func (s *Service) Cancel(ctx context.Context, account *domain.Account, id string) (*domain.BatchJob, error) {
	for attempt := 0; ; attempt++ {
		b, err := s.d.Store.GetBatch(ctx, account.ID, id)
		if err != nil || b.State.Terminal() {
			return b, err
		}
		now := s.d.Clock.Now()
		if err := domain.CheckTransition(b.State, domain.BatchCancelled); err != nil {
			return nil, err
		}
		out, err := s.d.Store.TransitionBatch(ctx, domain.BatchTransition{
			ID: b.ID, From: b.State, To: domain.BatchCancelled, Now: now, Webhook: batchWebhook(b, domain.BatchCancelled, now),
		})
		if domain.ErrorCode(err) == domain.Aborted && attempt < 20 {
			continue // it moved on meanwhile: cancel from its new state
		}
		if err == nil {
			s.dropInput(out)
		}
		return out, err
	}
}

// Upload stores an input file received at the signed upload URL and queues
// the batch; a second upload before processing starts replaces the first.
// Codes: PERMISSION_DENIED (bad or expired signature), NOT_FOUND,
// FAILED_PRECONDITION (processing started, or the batch is terminal),
// UNAVAILABLE.
func (s *Service) Upload(ctx context.Context, id string, expires int64, signature string, body io.Reader) (*domain.BatchJob, error) {
	if err := s.d.Signer.Verify(http.MethodPut, id, expires, signature, s.d.Clock.Now()); err != nil {
		return nil, err
	}
	b, err := s.d.Store.GetBatchByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if b.State != domain.BatchInitialized && b.State != domain.BatchQueued {
		return nil, domain.Errorf(domain.FailedPrecondition, "batch job %q is %s: its input file can no longer be replaced", id, b.State)
	}
	key := batchInputKey(id, domain.NewID())
	if _, err := s.d.Blobs.Put(ctx, key, body); err != nil {
		_ = s.d.Blobs.Delete(context.WithoutCancel(ctx), key)
		return nil, err
	}
	prev, err := s.d.Store.SetBatchInput(ctx, id, key, s.d.Clock.Now())
	if err != nil {
		_ = s.d.Blobs.Delete(context.WithoutCancel(ctx), key)
		return nil, err
	}
	if prev != "" && prev != key {
		if err := s.d.Blobs.Delete(ctx, prev); err != nil {
			s.d.Log.Warn("deleting a replaced batch input", "batch", id, "error", err.Error())
		}
	}
	s.notify()
	return s.d.Store.GetBatchByID(ctx, id)
}

// Download opens the output file of a completed batch, for the signed
// download URL. Codes: PERMISSION_DENIED, NOT_FOUND, FAILED_PRECONDITION
// (not completed), UNAVAILABLE.
func (s *Service) Download(ctx context.Context, id string, expires int64, signature string) (io.ReadCloser, int64, error) {
	if err := s.d.Signer.Verify(http.MethodGet, id, expires, signature, s.d.Clock.Now()); err != nil {
		return nil, 0, err
	}
	b, err := s.d.Store.GetBatchByID(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	if b.State != domain.BatchCompleted || b.OutputKey == "" {
		return nil, 0, domain.Errorf(domain.FailedPrecondition, "batch job %q is %s: it has no output file", id, b.State)
	}
	size, err := s.d.Blobs.Stat(ctx, b.OutputKey)
	if err != nil {
		return nil, 0, err
	}
	rc, err := s.d.Blobs.Open(ctx, b.OutputKey)
	return rc, size, err
}

func (s *Service) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
