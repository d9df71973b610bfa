package labels

import (
	"context"
	"fmt"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/rules"
)

// MaxLabelVersionsPerEvaluation bounds POST /v1/labels/evaluate (docs/api.md#limits).
const MaxLabelVersionsPerEvaluation = 10

// EvaluationService evaluates content against published label versions
// (POST /v1/labels/evaluate), serves the label hits of jobs and records
// reviewers' feedback on job results.
//
// Each evaluated version gets a job of its own (labelId/labelVersionId set),
// recorded through the JobStore so the job endpoints read it like any other:
// the job is created running under this service's lease owner, evaluated in
// the request, and finished with its result and hits in one transaction. A
// process that dies in between leaves the job to lease expiry.
type EvaluationService struct {
	labels   domain.LabelStore
	versions domain.LabelVersionStore
	jobs     domain.JobStore
	feedback domain.FeedbackStore
	// hitRanges serves unfiltered label-hit pages by seq range; nil uses the
	// job store's query only.
	hitRanges domain.LabelHitRangeStore
	clock     domain.Clock
	tokens    *paging.Tokens
	cfg       EvaluationConfig
	runner    *evaluation.ItemRunner
	owner     string
	plans     *evaluation.Plans
	cache     *evaluationCache
}

// EvaluationConfig are the limits of label evaluation.
type EvaluationConfig struct {
	MaxTextBytes int // bytes of the text content (256 KiB)
	// Images prechecks and analyses image content (image, imageUrl); nil
	// makes image content a per-result error.
	Images domain.ImageInspector
	// HitRanges reads label-hit pages by seq range (optional).
	HitRanges    domain.LabelHitRangeStore
	CacheEntries int           // evaluation reports kept (10,000)
	Lease        time.Duration // lease on a job while the request evaluates it (5 min)
	// ItemDeadline is the budget of the image's inspection and of each
	// version's evaluation (30 s), as JobConfig.ItemDeadline is for jobs.
	ItemDeadline time.Duration
	// Backends are the model backends labelEvalOptions.stack names (nil:
	// the built-in evaluators only).
	Backends domain.SignalBackends
	// Plans is the server's cache of compiled plans (nil: one of this
	// service's own).
	Plans *evaluation.Plans
}

// NewEvaluationService returns the service on its stores.
func NewEvaluationService(labels domain.LabelStore, versions domain.LabelVersionStore, jobStore domain.JobStore, feedback domain.FeedbackStore,
	clock domain.Clock, tokens *paging.Tokens, cfg EvaluationConfig) *EvaluationService {
	if cfg.MaxTextBytes <= 0 {
		cfg.MaxTextBytes = 256 << 10
	}
	if cfg.CacheEntries <= 0 {
		cfg.CacheEntries = 10000
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 5 * time.Minute
	}
	if cfg.ItemDeadline <= 0 {
		cfg.ItemDeadline = 30 * time.Second
	}
	if cfg.Plans == nil {
		cfg.Plans = evaluation.NewPlans(1000)
	}
	return &EvaluationService{
		labels: labels, versions: versions, jobs: jobStore, feedback: feedback, hitRanges: cfg.HitRanges, clock: clock, tokens: tokens, cfg: cfg,
		runner: evaluation.NewItemRunner(evaluation.ItemRunnerConfig{Images: cfg.Images, Budget: cfg.ItemDeadline, Now: clock.Now}),
		owner:  "label-eval-" + domain.NewID(), plans: cfg.Plans, cache: newEvaluationCache(cfg.CacheEntries),
	}
}

// EvaluateLabelsRequest is the input of Evaluate.
type EvaluateLabelsRequest struct {
	Content         domain.ContentInput
	Threshold       *float64
	LabelVersionIDs []string
	Options         *domain.LabelEvalOptions // per call; nil when not given
	GlobalContext   string                   // overrides the version's when not empty
}

// LabelEvaluation is the outcome of evaluating one version.
type LabelEvaluation struct {
	Score     float64
	Outcome   rules.Outcome
	Threshold float64
	// Job and Result are the recorded job and its only result.
	Job    *domain.Job
	Result *domain.JobResult
}

// LabelEvaluationResult is one element of the response, in request order.
type LabelEvaluationResult struct {
	LabelID        string
	LabelVersionID string
	JobID          string
	Evaluation     *LabelEvaluation // nil when Error is set
	Error          string
}

// LabelEvaluationResponse is the output of Evaluate.
type LabelEvaluationResponse struct {
	ContentHash string
	Results     []*LabelEvaluationResult
}

// CacheStats counts evaluation cache lookups, for tests and metrics.
type CacheStats struct{ Hits, Misses int64 }

// CacheStats returns the evaluation cache's counters.
func (s *EvaluationService) CacheStats() CacheStats {
	return CacheStats{Hits: s.cache.hits.Load(), Misses: s.cache.misses.Load()}
}

// Evaluate evaluates one content item against up to ten label versions of
// the account. An id that cannot be evaluated (unknown, another account's,
// its label deleted, disabled or archived) gets an Error and no job; the
// others are still evaluated. Codes: INVALID_ARGUMENT (no ids, more than
// ten, bad threshold or options, bad content).
func (s *EvaluationService) Evaluate(ctx context.Context, account *domain.Account, req EvaluateLabelsRequest) (*LabelEvaluationResponse, error) {
	switch n := len(req.LabelVersionIDs); {
	case n == 0:
		return nil, domain.InvalidField("labelVersionIds", "must name at least one label version")
	case n > MaxLabelVersionsPerEvaluation:
		return nil, domain.InvalidField("labelVersionIds", fmt.Sprintf("has %d ids; at most %d label versions per evaluation", n, MaxLabelVersionsPerEvaluation))
	}
	if t := req.Threshold; t != nil && (*t < 0 || *t > 1 || *t != *t) {
		return nil, domain.InvalidField("threshold", "must be between 0 and 1")
	}
	if req.Options != nil {
		if err := req.Options.Validate("labelEvalOptions"); err != nil {
			return nil, err
		}
		if req.Options.Stack != nil {
			if err := evaluation.CheckStack(s.cfg.Backends, "labelEvalOptions.stack", *req.Options.Stack); err != nil {
				return nil, err
			}
		}
	}
	if len([]rune(req.GlobalContext)) > domain.MaxGlobalContextLength {
		return nil, domain.InvalidField("globalContext", "must be at most 65536 characters")
	}
	items, sums, err := jobs.ValidateContent([]domain.ContentInput{req.Content}, 1, s.cfg.MaxTextBytes)
	if err != nil {
		return nil, err
	}
	// An image is fetched, prechecked and analysed once for all versions. A
	// precheck rejection is CANCELED with a PrecheckFailure detail (the 499
	// body) and no job is recorded for content that must not be evaluated.
	// Content the runner cannot take here (video, audio, images without an
	// inspector) fails each version's job instead (labelContentError).
	item := evaluation.Item{AccountID: account.ID, Field: "contentData", Content: items[0], ContentHash: sums[0].ContentHash}
	in := evaluation.UninspectedItem(item)
	if k := items[0].Kind; k == domain.ContentText || ((k == domain.ContentImage || k == domain.ContentImageURL) && s.cfg.Images != nil) {
		in, err = s.runner.Inspect(ctx, item)
		if ie, ok := evaluation.AsItemError(err); ok {
			return nil, ie.Err
		}
		if err != nil {
			return nil, err
		}
		sums[0].ContentHash = in.ContentHash()
	}
	resp := &LabelEvaluationResponse{ContentHash: sums[0].ContentHash}
	for _, id := range req.LabelVersionIDs {
		r, err := s.evaluateOne(ctx, account, req, id, items, sums, in)
		if err != nil {
			return nil, err
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// evaluateOne evaluates the content against version id, in a job of its
// own (see EvaluationService).
func (s *EvaluationService) evaluateOne(ctx context.Context, account *domain.Account, req EvaluateLabelsRequest, id string,
	items []domain.ContentItem, sums []domain.ContentSummary, in *evaluation.InspectedItem) (*LabelEvaluationResult, error) {
	res := &LabelEvaluationResult{LabelVersionID: id}
	v, l, why, err := s.evaluable(ctx, account, id)
	if v != nil {
		res.LabelID = v.LabelID
	}
	if err != nil || why != "" {
		res.Error = why
		return res, err
	}
	st, bypass := evaluation.LabelSettingsOf(v, l.Name, evaluation.LabelOverrides{
		Threshold: req.Threshold, Options: req.Options, GlobalContext: req.GlobalContext})
	j, err := s.startJob(ctx, account, l, v, st, items, sums)
	if err != nil {
		return nil, err
	}
	res.JobID = j.ID
	// Every way out of here ends the job: a job left running would wait
	// for its lease to expire.
	finished := false
	end := func(to domain.JobStatus, e *domain.JobError, results []*domain.JobResult, hits []*domain.LabelHit) error {
		finished = true
		return s.jobs.FinishJob(context.WithoutCancel(ctx), j.ID, s.owner, to, s.clock.Now(), e, results, hits)
	}
	defer func() {
		if !finished {
			e := domain.ErrJobInternal
			_ = end(domain.JobFailed, &e, nil, nil)
		}
	}()
	fail := func(e domain.JobError) (*LabelEvaluationResult, error) {
		if err := end(domain.JobFailed, &e, nil, nil); err != nil {
			return nil, err
		}
		j.Status, j.Error = domain.JobFailed, &e
		res.Error = e.Message
		return res, nil
	}
	if limit := account.Limits.EvaluationsPerDay; limit > 0 {
		ok, err := s.jobs.ChargeQuota(ctx, j.ID, s.owner, account.ID, j.Created.UTC().Format(time.DateOnly), int64(len(items)), limit)
		if err != nil {
			return nil, err
		}
		if !ok {
			return fail(domain.ErrJobQuota)
		}
	}
	if e := labelContentError(items[0], in.Content()); e != nil {
		return fail(*e)
	}
	eval := func(ctx context.Context, c rules.Content) (*rules.Report, error) {
		return s.report(ctx, v, st, bypass, c, sums[0].ContentHash)
	}
	seq := 0
	r, hits, err := s.runner.Evaluate(ctx, in.ForJob(j.ID), eval, &seq)
	if err != nil {
		ending, e := evaluation.End(ctx, ctx, err)
		if ending == evaluation.EndStopped {
			// The client went away: the job is canceled, not failed.
			_ = end(domain.JobCanceled, nil, nil, nil)
			return nil, ctx.Err()
		}
		return fail(e)
	}
	if err := end(domain.JobCompleted, nil, []*domain.JobResult{r}, hits); err != nil {
		return nil, err
	}
	done := s.clock.Now()
	j.Status, j.Completed, j.Updated, j.Results = domain.JobCompleted, &done, done, []*domain.JobResult{r}
	j.LeaseOwner, j.LeaseExpiresAt = "", nil
	ev := &LabelEvaluation{Threshold: st.Threshold, Outcome: r.Report.Result, Job: j, Result: r}
	if sec := evaluation.LabelSection(r.Report, l.Name); sec != nil {
		ev.Score, ev.Outcome = sec.Score, sec.Result
	}
	res.Evaluation = ev
	return res, nil
}

// evaluable returns version id of the account and its label, or why it
// cannot be evaluated (unknown, its label deleted, disabled or archived).
func (s *EvaluationService) evaluable(ctx context.Context, account *domain.Account, id string) (*domain.LabelVersion, *domain.Label, string, error) {
	v, err := s.versions.FindLabelVersion(ctx, account.ID, id)
	if domain.ErrorCode(err) == domain.NotFound {
		return nil, nil, fmt.Sprintf("label version %q not found", id), nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	l, err := s.labels.GetLabel(ctx, account.ID, v.LabelID)
	switch {
	case domain.ErrorCode(err) == domain.NotFound:
		return v, nil, fmt.Sprintf("label %q not found", v.LabelID), nil
	case err != nil:
		return v, nil, "", err
	case l.Disabled:
		return v, l, fmt.Sprintf("label %q is disabled", l.Name), nil
	case l.ArchivedAt != nil:
		return v, l, fmt.Sprintf("label %q is archived", l.Name), nil
	}
	return v, l, "", nil
}

// startJob records the job of one version's evaluation, running under this
// service's lease.
func (s *EvaluationService) startJob(ctx context.Context, account *domain.Account, l *domain.Label, v *domain.LabelVersion, st evaluation.LabelSettings,
	items []domain.ContentItem, sums []domain.ContentSummary) (*domain.Job, error) {
	now := s.clock.Now()
	until := now.Add(s.cfg.Lease)
	// The job is evaluated here, in the request; its stored input only
	// matters to a worker re-claiming it after a crash (which fails it, as
	// label jobs have no policy). Image bytes are not copied into each of up
	// to ten jobs.
	input := items
	if items[0].Kind != domain.ContentText {
		input = nil
	}
	j := &domain.Job{
		ID: domain.NewIDAt(now), AccountID: account.ID, Type: domain.JobTypeStandard, Status: domain.JobRunning,
		LabelID: l.ID, LabelVersionID: v.ID, Threshold: st.Threshold, Expedited: st.Expedited,
		Input: input, Contents: sums, LeaseOwner: s.owner, LeaseExpiresAt: &until, Attempts: 1,
		Created: now, Updated: now, Started: &now,
	}
	if err := s.jobs.CreateJob(ctx, j); err != nil {
		return nil, err
	}
	return j, nil
}

// labelContentError returns the job error for content that label
// evaluation cannot evaluate (video and audio; images without an image
// inspector), or nil.
func labelContentError(it domain.ContentItem, c rules.Content) *domain.JobError {
	switch {
	case it.Kind == domain.ContentText, c.Image != nil:
		return nil
	case it.Kind == domain.ContentImage || it.Kind == domain.ContentImageURL:
		e := domain.ErrJobNoImage
		return &e
	}
	e := domain.JobError{Reason: domain.ReasonJobFailed, Message: "Label evaluation supports text and image content; the content is " + string(it.Kind) + "."}
	return &e
}

// report evaluates (or reads from the cache) the content against a version.
func (s *EvaluationService) report(ctx context.Context, v *domain.LabelVersion, st evaluation.LabelSettings, bypass bool, content rules.Content, contentHash string) (*rules.Report, error) {
	key := st.ReportKey(contentHash, v.ID)
	if key != "" && !bypass {
		if rep, ok := s.cache.get(key); ok {
			return rep, nil
		}
	}
	eval, err := evaluation.LabelEvaluator(s.plans, v, st, bypass, s.cfg.Backends)
	if err != nil {
		return nil, err
	}
	rep, err := eval(ctx, content)
	if err != nil {
		return nil, err
	}
	if key != "" {
		s.cache.put(key, rep)
	}
	return rep, nil
}
