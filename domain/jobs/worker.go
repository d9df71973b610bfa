package jobs

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/domain/webhooks"
)

// Config are the limits and timings of jobs (docs/api.md#limits), validated by cmd.
type Config struct {
	// WebhookPoster, when set, validates webhook URLs as they will be used.
	WebhookPoster domain.WebhookPoster
	// Images prechecks and analyses image entries; nil fails jobs with
	// images (ErrJobNoImage).
	Images domain.ImageInspector
	// Media analyses video and audio entries (domain/evaluation); nil
	// fails jobs with them (ErrJobNoMedia). MediaPrecheck checks their frames
	// against the hash lists.
	Media             domain.MediaAnalyzer
	MediaPrecheck     domain.FramePrecheckFor
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
	// JOB_ERROR_REASON_EXECUTION_DEADLINE_EXCEEDED (docs/operations.md#scaling).
	ItemDeadline time.Duration
	// AccountMaxRunning caps the workers of this process one account holds
	// while another account has queued work (docs/operations.md#scaling); 0 means half of
	// Concurrency, at least one.
	AccountMaxRunning int
	// Backends are the model backends a job's options.options.stack names
	// (nil: the built-in evaluators only).
	Backends domain.SignalBackends
}

func (c Config) withDefaults() Config {
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

// Service submits, runs, streams and lists jobs, and runs the queue
// workers of this process.
type Service struct {
	jobs     domain.JobStore
	policies *policies.Service
	accounts domain.AccountStore
	clock    domain.Clock
	tokens   *paging.Tokens
	cfg      Config
	runner   *evaluation.ItemRunner
	owner    string // this process's lease owner id
	log      *slog.Logger
	// tasks and groups run the internal job types (tasks.go); groups
	// are background work, yielding to live: the evaluations waiting
	// clients wait for.
	tasks  map[domain.JobType]Task
	groups map[domain.JobType]GroupTask
	live   *liveWork
	// fair is set while RunWorkers runs: the per-item fair share of the
	// jobs its workers claimed.
	fair atomic.Pointer[fairShare]
	// stats is read by the worker health check and metrics.
	stats WorkerStats

	wake chan struct{}
	// bgCtx bounds the jobs this process runs outside a worker (synchronous
	// and streamed ones); Shutdown cancels it.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
}

// NewService returns the job service. owner identifies this process in
// leases; it must be unique among the processes sharing the database.
func NewService(jobs domain.JobStore, policies *policies.Service, accounts domain.AccountStore, clock domain.Clock, tokens *paging.Tokens, cfg Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg = cfg.withDefaults()
	runner := evaluation.NewItemRunner(evaluation.ItemRunnerConfig{
		Images: cfg.Images, Media: cfg.Media, MediaPrecheck: cfg.MediaPrecheck,
		Budget: cfg.ItemDeadline, Now: clock.Now,
	})
	return &Service{
		jobs: jobs, policies: policies, accounts: accounts, clock: clock, tokens: tokens,
		cfg: cfg, runner: runner, owner: domain.NewID(), log: log,
		wake: make(chan struct{}, 1), bgCtx: ctx, bgCancel: cancel,
		tasks: map[domain.JobType]Task{}, groups: map[domain.JobType]GroupTask{}, live: newLiveWork(),
	}
}

// Owner is this process's lease owner id.
func (s *Service) Owner() string { return s.owner }

// Request is a validated-on-submit request of POST /v1/jobs or
// POST /v1/jobs/stream.
type Request struct {
	PolicyID  string
	Content   []domain.ContentInput
	Threshold float64 // 0 means 0.5
	Expedited bool
	Options   map[string]string
	Webhook   *domain.Webhook
	Wait      bool
}

// prepare validates req and builds the job (not yet stored). Codes:
// INVALID_ARGUMENT, NOT_FOUND (policy), FAILED_PRECONDITION (disabled).
func (s *Service) prepare(ctx context.Context, account *domain.Account, req Request, queued bool) (*domain.Job, *rules.Plan, error) {
	if req.PolicyID == "" {
		return nil, nil, domain.InvalidField("policyId", "is required")
	}
	if req.Threshold < 0 || req.Threshold > 1 || req.Threshold != req.Threshold {
		return nil, nil, domain.InvalidField("threshold", "must be between 0 and 1")
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
	if err := evaluation.CheckStack(s.cfg.Backends, "options.options.stack", req.Options[domain.StackOption]); err != nil {
		return nil, nil, err
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
	j := &domain.Job{
		ID: domain.NewIDAt(now), AccountID: account.ID, Type: domain.JobTypeStandard, Status: domain.JobPending,
		PolicyID: p.ID, PolicyKey: p.Key, PolicyVersionID: v.ID, Threshold: t,
		Expedited: req.Expedited, Options: req.Options, Input: items, Contents: sums,
		Webhook: req.Webhook, Created: now, Updated: now,
	}
	// A queued job's sample is drawn once, by the worker that runs it
	// (queuedShadow): the job's Then is not stored with it, so a draw here
	// would be thrown away.
	if !queued {
		if sj := shadowJob(p.ShadowVersionID, p.ShadowSampleRate, j, s); sj != nil {
			j.Then = []*domain.Job{sj}
		}
	}
	return j, plan, nil
}

// validateWebhook applies the URL rules of docs/api.md#url-fetching when a poster is
// configured (it knows them), and a syntactic check otherwise.
func (s *Service) validateWebhook(w *domain.Webhook) error {
	if s.cfg.WebhookPoster != nil {
		return webhooks.ValidateTarget(s.cfg.WebhookPoster, "webhook.url", w.URL, w.ExtraHeaders)
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return domain.InvalidField("webhook.url", "must be an http or https URL")
	}
	return nil
}

// own marks j as running under this process's lease, for jobs the
// submitting request runs itself.
func (s *Service) own(j *domain.Job) {
	now := j.Created
	until := now.Add(s.cfg.Lease)
	j.Status, j.LeaseOwner, j.LeaseExpiresAt, j.Started, j.Attempts = domain.JobRunning, s.owner, &until, &now, 1
}

// Submit creates a job. Without req.Wait the job is queued and returned
// pending. With it, this process runs the job at once and Submit returns
// when the job is terminal or after the wait cap, whichever is first; the
// job keeps running when the cap (or the client) gives up. Codes:
// INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION.
func (s *Service) Submit(ctx context.Context, account *domain.Account, req Request) (*domain.Job, error) {
	if req.Wait {
		s.live.begin()
		defer s.live.end()
	}
	j, plan, err := s.prepare(ctx, account, req, !req.Wait)
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
	return s.runSync(ctx, account, j, plan)
}

// Get returns a job of the account, with its results when it is complete.
// Codes: NOT_FOUND.
func (s *Service) Get(ctx context.Context, account *domain.Account, id string) (*domain.Job, error) {
	j, err := s.jobs.GetJob(ctx, account.ID, id)
	if err != nil {
		return nil, domain.DescribeNotFound(err, "job %q not found", id)
	}
	if j.Status == domain.JobCompleted {
		if j.Results, err = s.jobs.ListJobResults(ctx, j.ID); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// View is how much of each job a list gives.
type View int

const (
	// ViewFull gives completed jobs their results, as Get does: the
	// default, and what a list gave before there were views.
	ViewFull View = iota
	// ViewBasic gives every job without its results: a page of a thousand
	// jobs is then about a sixteenth of the bytes and of the server's CPU,
	// for a client that only wants statuses and ids.
	ViewBasic
)

// List returns a page of the account's jobs matching f, newest first, and
// the next page's token ("" on the last page). In ViewFull, completed jobs
// carry their results, as Get gives them (docs/api.md#jobs: only incomplete
// jobs carry basic information); they are read in one statement for the
// page. Codes: INVALID_ARGUMENT (page size or a token of another request).
func (s *Service) List(ctx context.Context, account *domain.Account, f domain.JobFilter, view View, pageSize *int32, pageToken string) ([]*domain.Job, string, error) {
	q := paging.Query{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: 10, Max: 1000, Scope: "jobs|" + account.ID + "|" + f.Key()}
	page, next, err := paging.Keyset(s.tokens, q, nil, func(after *domain.JobCursor, limit int) ([]*domain.Job, error) {
		return s.jobs.ListJobs(ctx, account.ID, f, after, limit)
	}, func(j *domain.Job) domain.JobCursor { return domain.JobCursor{Created: j.Created, ID: j.ID} })
	if err != nil {
		return nil, "", err
	}
	if view == ViewBasic {
		return page, next, nil
	}
	var completed []string
	for _, j := range page {
		if j.Status == domain.JobCompleted {
			completed = append(completed, j.ID)
		}
	}
	if len(completed) == 0 {
		return page, next, nil
	}
	results, err := s.jobs.ListResultsOfJobs(ctx, completed)
	if err != nil {
		return nil, "", err
	}
	for _, j := range page {
		if j.Status == domain.JobCompleted {
			j.Results = results[j.ID]
			if j.Results == nil {
				j.Results = []*domain.JobResult{}
			}
		}
	}
	return page, next, nil
}

// begin runs the checks every job passes before its evaluation starts: the
// admission timeout (queued jobs on their first claim), the execution
// deadline and the daily quota. It returns the job error that ends the job
// instead, or nil and the time left until the deadline.
func (s *Service) begin(ctx context.Context, j *domain.Job, account *domain.Account, queued bool) (*domain.JobError, time.Duration, error) {
	now := s.clock.Now()
	// The wait in the queue ends at the first claim: a job that yielded its
	// worker to another account and is claimed again waited only that long.
	waited := now.Sub(j.Created)
	if j.Started != nil {
		waited = j.Started.Sub(j.Created)
	}
	if queued && j.Attempts <= 1 && waited > s.cfg.AdmissionTimeout {
		e := domain.ErrJobAdmission
		return &e, 0, nil
	}
	started := j.Created
	if j.Started != nil {
		started = *j.Started
	}
	left := started.Add(s.cfg.ExecutionDeadline).Sub(now)
	if left <= 0 {
		e := domain.ErrJobDeadline
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
			e := domain.ErrJobQuota
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
func (s *Service) execute(ctx context.Context, j *domain.Job, account *domain.Account, plan *rules.Plan) *evaluation.ItemError {
	jobErr, left, err := s.begin(ctx, j, account, account == nil)
	if err != nil {
		s.abandon(ctx, j, err)
		return nil
	}
	if jobErr == nil {
		jobErr = s.runner.Unavailable(j.Input)
	}
	if jobErr != nil {
		s.finish(j, domain.JobFailed, jobErr, nil, nil)
		return nil
	}
	ectx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	stopRenew := s.renewWhileRunning(ectx, cancel, j)
	defer stopRenew()

	if plan == nil {
		_, plan, err = s.policies.Plan(ectx, j.PolicyID, j.PolicyVersionID)
		if err != nil {
			return s.end(ctx, ectx, j, err)
		}
		s.queuedShadow(ectx, j)
	}
	return s.evaluateItems(ctx, ectx, j, evaluation.PolicyEvaluator(plan, j, s.cfg.Backends), account == nil)
}

// end ends a job this process holds whose evaluation returned err, as
// evaluation.End maps it: an item's failure or the execution deadline
// fails it, the process's shutdown releases it, a lost lease leaves it to
// its new owner, anything else fails it with the generic job error. The
// item's failure is returned.
func (s *Service) end(procCtx, execCtx context.Context, j *domain.Job, err error) *evaluation.ItemError {
	ending, jobErr := evaluation.End(procCtx, execCtx, err)
	switch ending {
	case evaluation.EndStopped:
		s.abandon(procCtx, j, err)
	case evaluation.EndLeaseLost:
		s.log.Warn("job lease lost", "job", j.ID)
	default:
		if ending == evaluation.EndInternal {
			s.log.Error("job failed", "job", j.ID, "error", err.Error())
		}
		s.finish(j, domain.JobFailed, &jobErr, nil, nil)
	}
	ie, _ := evaluation.AsItemError(err)
	return ie
}

// abandon gives a job back when this process cannot finish it: released to
// the queue on shutdown, or left to its lease expiry.
func (s *Service) abandon(ctx context.Context, j *domain.Job, err error) {
	if ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if rerr := s.jobs.ReleaseJob(rctx, j.ID, j.LeaseOwner, s.clock.Now()); rerr != nil && domain.ErrorCode(rerr) != domain.Aborted {
			s.log.Warn("releasing job", "job", j.ID, "error", rerr.Error())
		}
		s.Notify()
		return
	}
	s.log.Error("job not started; it will be retried after its lease expires", "job", j.ID, "error", err.Error())
}

// finish records the terminal transition and, when it took effect, applies it
// to j; a lost lease makes it a no-op.
func (s *Service) finish(j *domain.Job, to domain.JobStatus, jobErr *domain.JobError, results []*domain.JobResult, hits []*domain.LabelHit) {
	s.finishAfter(j, to, jobErr, results, 0, hits)
}

// finishAfter is finish for a job whose first stored results were stored
// already (when it yielded its worker): only the others are written, all
// of them are the job's outcome.
func (s *Service) finishAfter(j *domain.Job, to domain.JobStatus, jobErr *domain.JobError, results []*domain.JobResult, stored int, hits []*domain.LabelHit) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := s.clock.Now().UTC().Truncate(time.Microsecond) // as the store keeps it
	var then []*domain.Job
	if to == domain.JobCompleted {
		then = withActive(j.Then, results)
	}
	err := s.jobs.FinishJob(ctx, j.ID, j.LeaseOwner, to, now, jobErr, results[min(stored, len(results)):], hits, then...)
	switch {
	case err == nil:
		// j now says what the store says, so a waiting request can answer
		// without reading the job back.
		j.Status, j.Error, j.Completed, j.Updated = to, jobErr, &now, now
		j.LeaseOwner, j.LeaseExpiresAt = "", nil
		if to == domain.JobCompleted && !j.ResultsStored {
			j.Results = results
		}
	case domain.ErrorCode(err) == domain.Aborted:
		s.log.Warn("job finished elsewhere; this run's outcome is dropped", "job", j.ID)
	default:
		s.log.Error("recording job outcome", "job", j.ID, "error", err.Error())
	}
}
