package domain

import (
	"context"
	"errors"
	"fmt"
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
	return &JobService{
		jobs: jobs, policies: policies, accounts: accounts, clock: clock, tokens: tokens,
		cfg: cfg.withDefaults(), owner: NewID(), log: log,
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
	items, sums, err := validateContent(req.Content, s.cfg.MaxItems, s.cfg.MaxTextBytes)
	if err != nil {
		return nil, nil, err
	}
	if req.Webhook != nil {
		if err := s.validateWebhook(req.Webhook); err != nil {
			return nil, nil, err
		}
	}
	p, v, plan, err := s.policies.activePlan(ctx, account.ID, req.PolicyID)
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
		s.notify()
		return j, nil
	}
	if store, ok := s.fastPath(j, account); ok {
		return s.runFast(ctx, store, j, plan)
	}
	s.own(j)
	if err := s.jobs.CreateJob(ctx, j); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(done)
		s.execute(s.bgCtx, j, account, plan)
	}()
	timer := time.NewTimer(s.cfg.WaitCap)
	defer timer.Stop()
	select {
	case <-done:
		if j.syncErr != nil {
			return nil, j.syncErr
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

// finishedJobStore is implemented by job stores that can record a job that
// is already finished, with its results, in one write.
type finishedJobStore interface {
	CreateFinishedJob(ctx context.Context, j *Job, results []*JobResult, hits []*LabelHit) error
}

// fastPathMaxText bounds the text of a synchronous job that takes the fast
// path: small enough to evaluate in milliseconds.
const fastPathMaxText = 64 << 10

// fastPath reports whether a synchronous job may be evaluated before it is
// stored and then recorded finished in one write, instead of being stored
// running, evaluated under a lease and finished (two writes): small text-only
// jobs of accounts without a daily quota (charging needs the stored job).
// The trade: such a job is recorded only once it is done, so a crash during
// its few milliseconds of evaluation leaves no record; the client, whose
// request fails with the crash, never learned its id either.
func (s *JobService) fastPath(j *Job, account *Account) (finishedJobStore, bool) {
	store, ok := s.jobs.(finishedJobStore)
	if !ok || account.Limits.EvaluationsPerDay > 0 {
		return nil, false
	}
	total := 0
	for _, it := range j.Input {
		if it.Kind != ContentText {
			return nil, false
		}
		total += len(it.Text)
	}
	return store, total <= fastPathMaxText
}

// runFast evaluates j in the request and records it finished (see fastPath).
// The evaluation runs under the process's lifetime, not the request's, so a
// client that goes away does not leave the job half done.
func (s *JobService) runFast(ctx context.Context, store finishedJobStore, j *Job, plan *rules.Plan) (*Job, error) {
	ectx, cancel := context.WithTimeout(s.bgCtx, s.cfg.ExecutionDeadline)
	defer cancel()
	started := j.Created
	j.Started, j.Attempts = &started, 1
	var results []*JobResult
	var hits []*LabelHit
	var jobErr *JobError
	seq := 0
	for i, it := range j.Input {
		r, h, err := s.evaluateItem(ectx, j, i, it, plan, &seq)
		if err != nil {
			if s.bgCtx.Err() != nil {
				return nil, Errorf(Unavailable, "the server is shutting down; retry the request")
			}
			e := ErrJobInternal
			switch {
			case errors.Is(err, errItemDeadline):
				e = ErrJobItemDeadline
			case errors.Is(ectx.Err(), context.DeadlineExceeded):
				e = ErrJobDeadline
			default:
				s.log.Error("job failed", "job", j.ID, "error", err.Error())
			}
			jobErr, results, hits = &e, nil, nil
			break
		}
		results = append(results, r)
		hits = append(hits, h...)
	}
	now := s.clock.Now()
	j.Status, j.Error, j.Completed, j.Updated = JobCompleted, jobErr, &now, now
	if jobErr != nil {
		j.Status = JobFailed
	}
	if err := store.CreateFinishedJob(context.WithoutCancel(ctx), j, results, hits); err != nil {
		return nil, err
	}
	if j.Status == JobCompleted {
		j.Results = results
	}
	return j, nil
}

// Get returns a job of the account, with its results when it is complete.
// Codes: NOT_FOUND.
func (s *JobService) Get(ctx context.Context, account *Account, id string) (*Job, error) {
	j, err := s.jobs.GetJob(ctx, account.ID, id)
	if err != nil {
		return nil, describeNotFound(err, "job %q not found", id)
	}
	if j.Status == JobCompleted {
		if j.Results, err = s.jobs.ListJobResults(ctx, j.ID); err != nil {
			return nil, err
		}
	}
	return j, nil
}

func describeNotFound(err error, format string, args ...any) error {
	if ErrorCode(err) == NotFound {
		return Errorf(NotFound, format, args...)
	}
	return err
}

// List returns a page of the account's jobs matching f, newest first, and
// the next page's token ("" on the last page). Codes: INVALID_ARGUMENT (page
// size or a token of another request).
func (s *JobService) List(ctx context.Context, account *Account, f JobFilter, pageSize *int32, pageToken string) ([]*Job, string, error) {
	n, err := PageSize("pageSize", pageSize, 10, 1000)
	if err != nil {
		return nil, "", err
	}
	scope := "jobs|" + account.ID + "|" + f.key()
	var after *JobCursor
	if pageToken != "" {
		after = &JobCursor{}
		if err := s.tokens.Decode("pageToken", pageToken, scope, after); err != nil {
			return nil, "", err
		}
	}
	js, err := s.jobs.ListJobs(ctx, account.ID, f, after, n+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(js) > n {
		js = js[:n]
		last := js[n-1]
		next = s.tokens.Encode(scope, JobCursor{Created: last.Created, ID: last.ID})
	}
	return js, next, nil
}

func (s *JobService) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
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
// for another process (or left to its lease expiry when that fails).
func (s *JobService) execute(ctx context.Context, j *Job, account *Account, plan *rules.Plan) {
	jobErr, left, err := s.begin(ctx, j, account, account == nil)
	if err != nil {
		s.abandon(ctx, j, err)
		return
	}
	if jobErr == nil {
		jobErr = unavailableContent(j.Input, s.cfg.Images != nil, s.cfg.Media != nil)
	}
	if jobErr != nil {
		s.finish(j, JobFailed, jobErr, nil, nil)
		return
	}
	ectx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	stopRenew := s.renewWhileRunning(ectx, cancel, j)
	defer stopRenew()

	if plan == nil {
		_, plan, err = s.policies.plan(ectx, j.PolicyID, j.PolicyVersionID)
		if err != nil {
			s.endOnError(ctx, ectx, j, err)
			return
		}
	}
	var results []*JobResult
	var hits []*LabelHit
	seq := 0
	for i, it := range j.Input {
		r, h, err := s.evaluateItem(ectx, j, i, it, plan, &seq)
		if je := itemJobError(err); je != nil {
			if imageJobError(err) != nil {
				j.syncErr = err
			}
			s.finish(j, JobFailed, je, nil, nil)
			return
		}
		if err != nil {
			s.endOnError(ctx, ectx, j, err)
			return
		}
		results = append(results, r)
		hits = append(hits, h...)
	}
	s.finish(j, JobCompleted, nil, results, hits)
}

// errItemDeadline is the cause of an item's context whose budget ran out:
// it tells the item's budget apart from the job's deadline, a lost lease and
// a shutdown, which end the same context.
var errItemDeadline = errors.New("the content item overran its time budget")

// evaluateItem evaluates one entry within the item budget
// (JobConfig.ItemDeadline), so that no single item holds a worker longer:
// past it the error wraps errItemDeadline, whatever the evaluation returned
// as it was cut short (a failed fetch, a killed ffmpeg, ctx.Err()).
func (s *JobService) evaluateItem(ctx context.Context, j *Job, i int, it ContentItem, plan *rules.Plan, seq *int) (*JobResult, []*LabelHit, error) {
	ictx, cancel := context.WithTimeoutCause(ctx, s.cfg.ItemDeadline, errItemDeadline)
	defer cancel()
	r, h, err := s.evaluateContent(ictx, j, i, it, plan, seq)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(ictx), errItemDeadline) {
		return nil, nil, fmt.Errorf("contentData[%d]: %w", i, errItemDeadline)
	}
	return r, h, err
}

// itemJobError returns the job error that an item's evaluation error ends
// its job with, or nil for errors that are not the item's (see endOnError).
func itemJobError(err error) *JobError {
	if errors.Is(err, errItemDeadline) {
		e := ErrJobItemDeadline
		return &e
	}
	return mediaJobError(err)
}

// evaluateContent evaluates one text or image entry into its result and
// hits. Image entries are prechecked first (a rejection is an error that
// imageJobError maps).
func (s *JobService) evaluateContent(ctx context.Context, j *Job, i int, it ContentItem, plan *rules.Plan, seq *int) (*JobResult, []*LabelHit, error) {
	if isMediaKind(it.Kind) {
		return evaluateMediaItem(ctx, s.cfg.Media, s.cfg.MediaPrecheck, j, i, it, plan, s.clock.Now, seq)
	}
	content := rules.Content{Text: it.Text, Modality: "text"}
	hash, modality := j.Contents[i].ContentHash, ModalityText
	if it.Kind == ContentImage || it.Kind == ContentImageURL {
		img, err := s.cfg.Images.InspectImage(ctx, j.AccountID, j.ID, it, j.Options)
		if err != nil {
			return nil, nil, withFieldPrefix(err, fmt.Sprintf("contentData[%d].", i))
		}
		content = rules.Content{Text: img.Text, Image: &img.Features, Modality: "image"}
		hash, modality = img.ContentHash, ModalityImage
	}
	rep, err := plan.Evaluate(ctx, content, rules.EvalOptions{Threshold: j.Threshold, Expedited: j.Expedited})
	if err != nil {
		return nil, nil, err
	}
	r := &JobResult{
		ID: NewID(), JobID: j.ID, Index: i, ContentHash: hash,
		Metadata: it.Metadata, Report: rep, Created: s.clock.Now(),
	}
	return r, contentHits(j.ID, r.ID, modality, rep, seq), nil
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
		s.notify()
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

// renewWhileRunning renews j's lease every third of the lease until stopped;
// losing the lease cancels the job's context through cancel.
func (s *JobService) renewWhileRunning(ctx context.Context, cancel context.CancelFunc, j *Job) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				now := s.clock.Now()
				err := s.jobs.RenewLease(ctx, j.ID, j.LeaseOwner, now.Add(s.cfg.Lease), now)
				if ErrorCode(err) == Aborted {
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// RunWorkers claims and runs queued jobs until ctx ends, then releases the
// jobs still running and returns. Several processes may run workers on one
// database; the store's claims and leases make each job run to completion
// once.
func (s *JobService) RunWorkers(ctx context.Context) {
	slots := make(chan struct{}, s.cfg.Concurrency)
	freed := make(chan struct{}, s.cfg.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	for {
		free := s.cfg.Concurrency - len(slots)
		claimed := 0
		if free > 0 && ctx.Err() == nil {
			now := s.clock.Now()
			jobs, err := s.jobs.ClaimJobs(ctx, s.owner, now, now.Add(s.cfg.Lease), free, s.cfg.AccountMaxRunning)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("claiming jobs", "error", err.Error())
			}
			claimed = len(jobs)
			for _, j := range jobs {
				slots <- struct{}{}
				running.Add(1)
				go func() {
					defer running.Done()
					defer func() {
						<-slots
						select {
						case freed <- struct{}{}:
						default:
						}
					}()
					s.execute(ctx, j, nil, nil)
				}()
			}
		}
		if claimed > 0 && claimed == free {
			continue // there may be more, and no slot is free anyway
		}
		timer := time.NewTimer(s.cfg.PollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
		case <-freed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Shutdown stops the jobs this process runs for requests (synchronous and
// streamed) and waits for them, up to ctx.
func (s *JobService) Shutdown(ctx context.Context) {
	s.bgCancel()
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// StreamItem is one line of a job stream: the result of entry Index, or the
// error that entry failed with.
type StreamItem struct {
	Index  int
	Result *JobResult
	Err    *Error
}

// JobStream is a streamed job (POST /v1/jobs/stream): created and owned by
// the requesting process, evaluated entry by entry as Run is called.
type JobStream struct {
	Job  *Job
	s    *JobService
	plan *rules.Plan
	left time.Duration
}

// StartStream validates the request and records its job, running under this
// process's lease. Validation errors come from here, before anything is
// streamed. Codes: INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION,
// RESOURCE_EXHAUSTED (daily quota; the job is recorded failed).
func (s *JobService) StartStream(ctx context.Context, account *Account, req JobRequest) (*JobStream, error) {
	req.Wait, req.Webhook = false, nil
	j, plan, err := s.prepare(ctx, account, req)
	if err != nil {
		return nil, err
	}
	s.own(j)
	if err := s.jobs.CreateJob(ctx, j); err != nil {
		return nil, err
	}
	jobErr, left, err := s.begin(ctx, j, account, false)
	if err != nil {
		s.finish(j, JobFailed, &ErrJobInternal, nil, nil)
		return nil, err
	}
	if jobErr != nil {
		s.finish(j, JobFailed, jobErr, nil, nil)
		if jobErr.Reason == ReasonQuotaExceeded {
			return nil, Errorf(ResourceExhausted, "%s", jobErr.Message)
		}
		return nil, Errorf(DeadlineExceeded, "%s", jobErr.Message)
	}
	return &JobStream{Job: j, s: s, plan: plan, left: left}, nil
}

// Run evaluates the entries in order and calls emit with each one as soon
// as it is done. When ctx ends (the client went away) or emit fails, the
// remaining entries are not evaluated and the job is recorded canceled; the
// error is returned. An entry that cannot be evaluated (image, video, audio
// in this build) gets an error item, and the job is recorded failed with
// JOB_ERROR_REASON_JOB_FAILED after the other entries are streamed.
func (st *JobStream) Run(ctx context.Context, emit func(StreamItem) error) error {
	s, j := st.s, st.Job
	ectx, cancel := context.WithTimeout(ctx, st.left)
	defer cancel()
	stopShutdown := context.AfterFunc(s.bgCtx, cancel)
	defer stopShutdown()
	stopRenew := s.renewWhileRunning(ectx, cancel, j)
	defer stopRenew()

	var results []*JobResult
	var hits []*LabelHit
	var jobErr *JobError
	seq := 0
	for i, it := range j.Input {
		if e := unavailableContent([]ContentItem{it}, s.cfg.Images != nil, s.cfg.Media != nil); e != nil {
			jobErr = e
			if err := emit(StreamItem{Index: i, Err: Errorf(Unimplemented, "%s", e.Message)}); err != nil {
				s.finish(j, JobCanceled, nil, nil, nil)
				return err
			}
			continue
		}
		r, h, err := s.evaluateItem(ectx, j, i, it, st.plan, &seq)
		if je := itemJobError(err); je != nil {
			// The entry's error line carries the precheck body (code 1), the
			// fetch error, the media failure, or the item's overrun budget;
			// the other entries still stream.
			jobErr = je
			var de *Error
			switch {
			case errors.Is(err, errItemDeadline):
				de = Errorf(DeadlineExceeded, "%s", je.Message)
			case !errors.As(err, &de):
				de = Errorf(InvalidArgument, "%s", je.Message)
			}
			if err := emit(StreamItem{Index: i, Err: de}); err != nil {
				s.finish(j, JobCanceled, nil, nil, nil)
				return err
			}
			continue
		}
		if err != nil {
			switch {
			case ctx.Err() != nil || s.bgCtx.Err() != nil:
				s.finish(j, JobCanceled, nil, nil, nil)
				return err
			case errors.Is(ectx.Err(), context.DeadlineExceeded):
				s.finish(j, JobFailed, &ErrJobDeadline, nil, nil)
				_ = emit(StreamItem{Index: i, Err: Errorf(DeadlineExceeded, "%s", ErrJobDeadline.Message)})
				return err
			default:
				s.log.Error("stream job failed", "job", j.ID, "error", err.Error())
				s.finish(j, JobFailed, &ErrJobInternal, nil, nil)
				_ = emit(StreamItem{Index: i, Err: Errorf(Internal, "%s", ErrJobInternal.Message)})
				return err
			}
		}
		results = append(results, r)
		hits = append(hits, h...)
		if err := emit(StreamItem{Index: i, Result: r}); err != nil {
			s.finish(j, JobCanceled, nil, nil, nil)
			return err
		}
	}
	if jobErr != nil {
		s.finish(j, JobFailed, jobErr, results, hits)
		return nil
	}
	s.finish(j, JobCompleted, nil, results, hits)
	return nil
}
