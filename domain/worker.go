package domain

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// JobConfig are the limits and timings of jobs (DESIGN §10), validated by cmd.
type JobConfig struct {
	// WebhookPoster, when set, validates webhook URLs as they will be used.
	WebhookPoster WebhookPoster
	// Images prechecks and analyses image entries; nil fails jobs with
	// images (ErrJobNoImage).
	Images ImageInspector
	// Media analyses video and audio entries (domain/media_jobs.go); nil
	// fails jobs with them (ErrJobNoMedia). MediaPrecheck checks their frames
	// against the hash lists.
	Media             MediaAnalyzer
	MediaPrecheck     FramePrecheckFor
	MaxItems          int           // contentData entries per job (100)
	MaxTextBytes      int           // bytes of one text entry (256 KiB)
	WaitCap           time.Duration // longest waitForCompletion (30 s)
	ExecutionDeadline time.Duration // from first start to the end (15 min)
	AdmissionTimeout  time.Duration // longest wait in the queue (10 min)
	Lease             time.Duration // a worker's hold on a job, renewed while it runs
	PollInterval      time.Duration // how often an idle worker looks for jobs
	Concurrency       int           // jobs one process's workers run at once
	// ItemDeadline is the budget of one content item's evaluation (30 s):
	// past it the item, and so its job, fails with
	// JOB_ERROR_REASON_EXECUTION_DEADLINE_EXCEEDED (DESIGN §15).
	ItemDeadline time.Duration
	// AccountMaxRunning caps the workers of this process one account holds
	// while another account has queued work (DESIGN §15); 0 means half of
	// Concurrency, at least one.
	AccountMaxRunning int
}

func (c JobConfig) withDefaults() JobConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.MaxItems <= 0 {
		c.MaxItems = 100
	}
	if c.MaxTextBytes <= 0 {
		c.MaxTextBytes = 256 << 10
	}
	def(&c.WaitCap, 30*time.Second)
	def(&c.ExecutionDeadline, 15*time.Minute)
	def(&c.AdmissionTimeout, 10*time.Minute)
	def(&c.Lease, 30*time.Second)
	def(&c.PollInterval, 250*time.Millisecond)
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	def(&c.ItemDeadline, 30*time.Second)
	if c.AccountMaxRunning <= 0 {
		c.AccountMaxRunning = max(1, c.Concurrency/2)
	}
	return c
}

// JobService submits, runs, streams and lists jobs, and runs the queue
// workers of this process.
type JobService struct {
	jobs     JobStore
	policies *PolicyService
	accounts AccountStore
	clock    Clock
	tokens   *PageTokens
	cfg      JobConfig
	runner   *ItemRunner
	owner    string // this process's lease owner id
	log      *slog.Logger

	wake chan struct{}
	// bgCtx bounds the jobs this process runs outside a worker (synchronous
	// and streamed ones); Shutdown cancels it.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
}

// NewJobService returns the job service. owner identifies this process in
// leases; it must be unique among the processes sharing the database.
func NewJobService(jobs JobStore, policies *PolicyService, accounts AccountStore, clock Clock, tokens *PageTokens, cfg JobConfig, log *slog.Logger) *JobService {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg = cfg.withDefaults()
	runner := NewItemRunner(ItemRunnerConfig{
		Images: cfg.Images, Media: cfg.Media, MediaPrecheck: cfg.MediaPrecheck,
		Budget: cfg.ItemDeadline, Now: clock.Now,
	})
	return &JobService{
		jobs: jobs, policies: policies, accounts: accounts, clock: clock, tokens: tokens,
		cfg: cfg, runner: runner, owner: NewID(), log: log,
		wake: make(chan struct{}, 1), bgCtx: ctx, bgCancel: cancel,
	}
}

// Owner is this process's lease owner id.
func (s *JobService) Owner() string { return s.owner }

// JobRequest is a validated-on-submit request of POST /v1/jobs or
// POST /v1/jobs/stream.
type JobRequest struct {
	PolicyID  string
	Content   []ContentInput
	Threshold float64 // 0 means 0.5
	Expedited bool
	Options   map[string]string
	Webhook   *Webhook
	Wait      bool
}

// prepare validates req and builds the job (not yet stored). Codes:
// INVALID_ARGUMENT, NOT_FOUND (policy), FAILED_PRECONDITION (disabled).
func (s *JobService) prepare(ctx context.Context, account *Account, req JobRequest) (*Job, *rules.Plan, error) {
	if req.PolicyID == "" {
		return nil, nil, InvalidField("policyId", "is required")
	}
	if req.Threshold < 0 || req.Threshold > 1 || req.Threshold != req.Threshold {
		return nil, nil, InvalidField("threshold", "must be between 0 and 1")
	}
	items, sums, err := ValidateContent(req.Content, s.cfg.MaxItems, s.cfg.MaxTextBytes)
	if err != nil {
		return nil, nil, err
	}
	if req.Webhook != nil {
		if err := s.validateWebhook(req.Webhook); err != nil {
			return nil, nil, err
		}
	}
	p, v, plan, err := s.policies.ActivePlan(ctx, account.ID, req.PolicyID)
	if err != nil {
		return nil, nil, err
	}
	t := req.Threshold
	if t == 0 {
		t = rules.DefaultThreshold
	}
	now := s.clock.Now()
	j := &Job{
		ID: NewID(), AccountID: account.ID, Type: JobTypeStandard, Status: JobPending,
		PolicyID: p.ID, PolicyKey: p.Key, PolicyVersionID: v.ID, Threshold: t,
		Expedited: req.Expedited, Options: req.Options, Input: items, Contents: sums,
		Webhook: req.Webhook, Created: now, Updated: now,
	}
	return j, plan, nil
}

// validateWebhook applies the URL rules of DESIGN §5 when a poster is
// configured (it knows them), and a syntactic check otherwise.
func (s *JobService) validateWebhook(w *Webhook) error {
	if s.cfg.WebhookPoster != nil {
		return ValidateWebhook(s.cfg.WebhookPoster, "webhook.url", w.URL, w.ExtraHeaders)
	}
	u, err := parseURL(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return InvalidField("webhook.url", "must be an http or https URL")
	}
	return nil
}

// own marks j as running under this process's lease, for jobs the
// submitting request runs itself.
func (s *JobService) own(j *Job) {
	now := j.Created
	until := now.Add(s.cfg.Lease)
	j.Status, j.LeaseOwner, j.LeaseExpiresAt, j.Started, j.Attempts = JobRunning, s.owner, &until, &now, 1
}

// Submit creates a job. Without req.Wait the job is queued and returned
// pending. With it, this process runs the job at once and Submit returns
// when the job is terminal or after the wait cap, whichever is first; the
// job keeps running when the cap (or the client) gives up. Codes:
// INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION.
func (s *JobService) Submit(ctx context.Context, account *Account, req JobRequest) (*Job, error) {
	j, plan, err := s.prepare(ctx, account, req)
	if err != nil {
		return nil, err
	}
	if !req.Wait {
		if err := s.jobs.CreateJob(ctx, j); err != nil {
			return nil, err
		}
		s.Notify()
		return j, nil
	}
	if s.fastPath(j, account) {
		return s.runFast(ctx, j, plan)
	}
	s.own(j)
	if err := s.jobs.CreateJob(ctx, j); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var itemErr *ItemError
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(done)
		itemErr = s.execute(s.bgCtx, j, account, plan)
	}()
	timer := time.NewTimer(s.cfg.WaitCap)
	defer timer.Stop()
	select {
	case <-done:
		if itemErr != nil {
			if err := itemErr.RequestError(); err != nil {
				return nil, err
			}
		}
		if j.Status.Terminal() { // finished by this process: j is current
			return j, nil
		}
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Get(ctx, account, j.ID)
}

// Get returns a job of the account, with its results when it is complete.
// Codes: NOT_FOUND.
func (s *JobService) Get(ctx context.Context, account *Account, id string) (*Job, error) {
	j, err := s.jobs.GetJob(ctx, account.ID, id)
	if err != nil {
		return nil, DescribeNotFound(err, "job %q not found", id)
	}
	if j.Status == JobCompleted {
		if j.Results, err = s.jobs.ListJobResults(ctx, j.ID); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// List returns a page of the account's jobs matching f, newest first, and
// the next page's token ("" on the last page). Codes: INVALID_ARGUMENT (page
// size or a token of another request).
func (s *JobService) List(ctx context.Context, account *Account, f JobFilter, pageSize *int32, pageToken string) ([]*Job, string, error) {
	q := PageQuery{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: 10, Max: 1000, Scope: "jobs|" + account.ID + "|" + f.key()}
	return KeysetPage(s.tokens, q, nil, func(after *JobCursor, limit int) ([]*Job, error) {
		return s.jobs.ListJobs(ctx, account.ID, f, after, limit)
	}, func(j *Job) JobCursor { return JobCursor{Created: j.Created, ID: j.ID} })
}

// begin runs the checks every job passes before its evaluation starts: the
// admission timeout (queued jobs on their first claim), the execution
// deadline and the daily quota. It returns the job error that ends the job
// instead, or nil and the time left until the deadline.
func (s *JobService) begin(ctx context.Context, j *Job, account *Account, queued bool) (*JobError, time.Duration, error) {
	now := s.clock.Now()
	if queued && j.Attempts <= 1 && now.Sub(j.Created) > s.cfg.AdmissionTimeout {
		e := ErrJobAdmission
		return &e, 0, nil
	}
	started := j.Created
	if j.Started != nil {
		started = *j.Started
	}
	left := started.Add(s.cfg.ExecutionDeadline).Sub(now)
	if left <= 0 {
		e := ErrJobDeadline
		return &e, 0, nil
	}
	if account == nil {
		a, err := s.accounts.GetAccount(ctx, j.AccountID)
		if err != nil {
			return nil, 0, err
		}
		account = a
	}
	if limit := account.Limits.EvaluationsPerDay; limit > 0 {
		ok, err := s.jobs.ChargeQuota(ctx, j.ID, j.LeaseOwner, j.AccountID, now.UTC().Format(time.DateOnly), int64(len(j.Input)), limit)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			e := ErrJobQuota
			return &e, 0, nil
		}
	}
	return nil, left, nil
}

// execute runs a job this process holds, to its terminal status. ctx is the
// process's lifetime: when it ends first, the job is released to the queue
// for another process (or left to its lease expiry when that fails). An
// item's failure, which failed the job, is returned: a synchronous caller
// may have to answer with it instead of the job.
func (s *JobService) execute(ctx context.Context, j *Job, account *Account, plan *rules.Plan) *ItemError {
	jobErr, left, err := s.begin(ctx, j, account, account == nil)
	if err != nil {
		s.abandon(ctx, j, err)
		return nil
	}
	if jobErr == nil {
		jobErr = unavailableContent(j.Input, s.cfg.Images != nil, s.cfg.Media != nil)
	}
	if jobErr != nil {
		s.finish(j, JobFailed, jobErr, nil, nil)
		return nil
	}
	ectx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	stopRenew := s.renewWhileRunning(ectx, cancel, j)
	defer stopRenew()

	if plan == nil {
		_, plan, err = s.policies.Plan(ectx, j.PolicyID, j.PolicyVersionID)
		if err != nil {
			s.endOnError(ctx, ectx, j, err)
			return nil
		}
	}
	eval := PlanEvaluator(plan, j)
	var results []*JobResult
	var hits []*LabelHit
	seq := 0
	for i := range j.Input {
		r, h, err := s.runner.Run(ectx, JobItem(j, i), eval, &seq)
		if ie, ok := AsItemError(err); ok {
			s.finish(j, JobFailed, &ie.Job, nil, nil)
			return ie
		}
		if err != nil {
			s.endOnError(ctx, ectx, j, err)
			return nil
		}
		results = append(results, r)
		hits = append(hits, h...)
	}
	s.finish(j, JobCompleted, nil, results, hits)
	return nil
}

// endOnError ends a job whose evaluation returned err: the execution
// deadline fails it, the process's shutdown releases it, anything else fails
// it with the generic job error.
func (s *JobService) endOnError(procCtx, execCtx context.Context, j *Job, err error) {
	switch {
	case procCtx.Err() != nil:
		s.abandon(procCtx, j, err)
	case errors.Is(execCtx.Err(), context.DeadlineExceeded):
		e := ErrJobDeadline
		s.finish(j, JobFailed, &e, nil, nil)
	case execCtx.Err() != nil:
		// The lease was lost: another worker owns the job now.
		s.log.Warn("job lease lost", "job", j.ID)
	default:
		s.log.Error("job failed", "job", j.ID, "error", err.Error())
		e := ErrJobInternal
		s.finish(j, JobFailed, &e, nil, nil)
	}
}

// abandon gives a job back when this process cannot finish it: released to
// the queue on shutdown, or left to its lease expiry.
func (s *JobService) abandon(ctx context.Context, j *Job, err error) {
	if ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if rerr := s.jobs.ReleaseJob(rctx, j.ID, j.LeaseOwner, s.clock.Now()); rerr != nil && ErrorCode(rerr) != Aborted {
			s.log.Warn("releasing job", "job", j.ID, "error", rerr.Error())
		}
		s.Notify()
		return
	}
	s.log.Error("job not started; it will be retried after its lease expires", "job", j.ID, "error", err.Error())
}

// finish records the terminal transition and, when it took effect, applies it
// to j; a lost lease makes it a no-op.
func (s *JobService) finish(j *Job, to JobStatus, jobErr *JobError, results []*JobResult, hits []*LabelHit) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := s.clock.Now().UTC().Truncate(time.Microsecond) // as the store keeps it
	err := s.jobs.FinishJob(ctx, j.ID, j.LeaseOwner, to, now, jobErr, results, hits)
	switch {
	case err == nil:
		// j now says what the store says, so a waiting request can answer
		// without reading the job back.
		j.Status, j.Error, j.Completed, j.Updated = to, jobErr, &now, now
		j.LeaseOwner, j.LeaseExpiresAt = "", nil
		if to == JobCompleted {
			j.Results = results
		}
	case ErrorCode(err) == Aborted:
		s.log.Warn("job finished elsewhere; this run's outcome is dropped", "job", j.ID)
	default:
		s.log.Error("recording job outcome", "job", j.ID, "error", err.Error())
	}
}
