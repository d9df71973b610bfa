package labels

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
)

// MaxLabelVersionsPerEvaluation bounds POST /v1/labels/evaluate (SPEC.md).
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
	tokens    *domain.PageTokens
	cfg       EvaluationConfig
	runner    *jobs.ItemRunner
	owner     string
	plans     *rules.Cache
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
}

// NewEvaluationService returns the service on its stores.
func NewEvaluationService(labels domain.LabelStore, versions domain.LabelVersionStore, jobStore domain.JobStore, feedback domain.FeedbackStore,
	clock domain.Clock, tokens *domain.PageTokens, cfg EvaluationConfig) *EvaluationService {
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
	return &EvaluationService{
		labels: labels, versions: versions, jobs: jobStore, feedback: feedback, hitRanges: cfg.HitRanges, clock: clock, tokens: tokens, cfg: cfg,
		runner: jobs.NewItemRunner(jobs.ItemRunnerConfig{Images: cfg.Images, Budget: cfg.ItemDeadline, Now: clock.Now}),
		owner:  "label-eval-" + domain.NewID(), plans: rules.NewCache(1000), cache: newEvaluationCache(cfg.CacheEntries),
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
			if err := domain.CheckStack(s.cfg.Backends, "labelEvalOptions.stack", *req.Options.Stack); err != nil {
				return nil, err
			}
		}
	}
	if len([]rune(req.GlobalContext)) > domain.MaxGlobalContextLength {
		return nil, domain.InvalidField("globalContext", "must be at most 65536 characters")
	}
	items, sums, err := domain.ValidateContent([]domain.ContentInput{req.Content}, 1, s.cfg.MaxTextBytes)
	if err != nil {
		return nil, err
	}
	// An image is fetched, prechecked and analysed once for all versions. A
	// precheck rejection is CANCELED with a PrecheckFailure detail (the 499
	// body) and no job is recorded for content that must not be evaluated.
	// Content the runner cannot take here (video, audio, images without an
	// inspector) fails each version's job instead (labelContentError).
	item := jobs.Item{AccountID: account.ID, Field: "contentData", Content: items[0], ContentHash: sums[0].ContentHash}
	in := jobs.UninspectedItem(item)
	if k := items[0].Kind; k == domain.ContentText || ((k == domain.ContentImage || k == domain.ContentImageURL) && s.cfg.Images != nil) {
		in, err = s.runner.Inspect(ctx, item)
		if ie, ok := jobs.AsItemError(err); ok {
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

// evalSettings are the effective settings of one version's evaluation.
type evalSettings struct {
	Threshold        float64 `json:"t"`
	GlobalContext    string  `json:"g"`
	Expedited        bool    `json:"e"`
	BundleSize       int32   `json:"b"`
	Stack            string  `json:"s"`
	ImageDetailLevel string  `json:"i"`
	LabelName        string  `json:"n"`
}

// labelEvalSettings applies the precedence rules: request threshold > call options >
// version options > 0.5 (0 counts as unset, as for jobs); the call's global
// context overrides the version's; other call options override the
// version's one by one.
func labelEvalSettings(req EvaluateLabelsRequest, v *domain.LabelVersion, labelName string) (evalSettings, bool) {
	call := domain.LabelEvalOptions{}
	if req.Options != nil {
		call = *req.Options
	}
	ver := v.EvalOptions
	st := evalSettings{Threshold: rules.DefaultThreshold, GlobalContext: v.GlobalContext, LabelName: labelName}
	for _, t := range []*float64{req.Threshold, call.Threshold, ver.Threshold} {
		if t != nil && *t > 0 {
			st.Threshold = *t
			break
		}
	}
	if req.GlobalContext != "" {
		st.GlobalContext = req.GlobalContext
	}
	st.Expedited = lderefOr(call.Expedited, ver.Expedited, false)
	st.BundleSize = lderefOr(call.BundleSize, ver.BundleSize, 0)
	st.Stack = lderefOr(call.Stack, ver.Stack, "")
	st.ImageDetailLevel = lderefOr(call.ImageDetailLevel, ver.ImageDetailLevel, "")
	bypass := lderefOr(call.BypassCache, ver.BypassCache, false)
	return st, bypass
}

func lderefOr[T any](first, second *T, def T) T {
	if first != nil {
		return *first
	}
	if second != nil {
		return *second
	}
	return def
}

func (s *EvaluationService) evaluateOne(ctx context.Context, account *domain.Account, req EvaluateLabelsRequest, id string,
	items []domain.ContentItem, sums []domain.ContentSummary, in *jobs.InspectedItem) (*LabelEvaluationResult, error) {
	res := &LabelEvaluationResult{LabelVersionID: id}
	v, err := s.versions.FindLabelVersion(ctx, account.ID, id)
	if domain.ErrorCode(err) == domain.NotFound {
		res.Error = fmt.Sprintf("label version %q not found", id)
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	res.LabelID = v.LabelID
	l, err := s.labels.GetLabel(ctx, account.ID, v.LabelID)
	switch {
	case domain.ErrorCode(err) == domain.NotFound:
		res.Error = fmt.Sprintf("label %q not found", v.LabelID)
		return res, nil
	case err != nil:
		return nil, err
	case l.Disabled:
		res.Error = fmt.Sprintf("label %q is disabled", l.Name)
		return res, nil
	case l.ArchivedAt != nil:
		res.Error = fmt.Sprintf("label %q is archived", l.Name)
		return res, nil
	}
	st, bypass := labelEvalSettings(req, v, l.Name)

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
		ID: domain.NewID(), AccountID: account.ID, Type: domain.JobTypeStandard, Status: domain.JobRunning,
		LabelID: l.ID, LabelVersionID: v.ID, Threshold: st.Threshold, Expedited: st.Expedited,
		Input: input, Contents: sums, LeaseOwner: s.owner, LeaseExpiresAt: &until, Attempts: 1,
		Created: now, Updated: now, Started: &now,
	}
	if err := s.jobs.CreateJob(ctx, j); err != nil {
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
		ok, err := s.jobs.ChargeQuota(ctx, j.ID, s.owner, account.ID, now.UTC().Format(time.DateOnly), int64(len(items)), limit)
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
		if ctx.Err() != nil {
			// The client went away: the job is canceled, not failed.
			_ = end(domain.JobCanceled, nil, nil, nil)
			return nil, ctx.Err()
		}
		if ie, ok := jobs.AsItemError(err); ok {
			return fail(ie.Job)
		}
		return fail(domain.ErrJobInternal)
	}
	rep := r.Report
	if err := end(domain.JobCompleted, nil, []*domain.JobResult{r}, hits); err != nil {
		return nil, err
	}
	done := s.clock.Now()
	j.Status, j.Completed, j.Updated, j.Results = domain.JobCompleted, &done, done, []*domain.JobResult{r}
	j.LeaseOwner, j.LeaseExpiresAt = "", nil
	ev := &LabelEvaluation{Threshold: st.Threshold, Outcome: rep.Result, Job: j, Result: r}
	if sec := labelSection(rep, l.Name); sec != nil {
		ev.Score, ev.Outcome = sec.Score, sec.Result
	}
	res.Evaluation = ev
	return res, nil
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

// labelSection returns the section of a label version's report: the one
// named after the label, or the only one.
func labelSection(rep *rules.Report, name string) *rules.SectionReport {
	for i := range rep.Sections {
		if rep.Sections[i].Name == name {
			return &rep.Sections[i]
		}
	}
	if len(rep.Sections) == 1 {
		return &rep.Sections[0]
	}
	return nil
}

// report evaluates (or reads from the cache) the content against a version.
func (s *EvaluationService) report(ctx context.Context, v *domain.LabelVersion, st evalSettings, bypass bool, content rules.Content, contentHash string) (*rules.Report, error) {
	key := ""
	if contentHash != "" {
		b, _ := json.Marshal(st)
		key = contentHash + "\x00" + v.ID + "\x00" + strconv.FormatFloat(st.Threshold, 'g', -1, 64) + "\x00" + string(b)
		if !bypass {
			if rep, ok := s.cache.get(key); ok {
				return rep, nil
			}
		}
	}
	// The section takes the label's current name, so the plan is keyed by it
	// too.
	plan, err := s.plans.GetOrCompile(v.ID+"\x00"+st.LabelName, v.Text, rules.CompileOptions{LabelName: st.LabelName})
	if err != nil {
		return nil, err
	}
	rep, err := plan.Evaluate(ctx, content,
		rules.EvalOptions{Threshold: st.Threshold, Expedited: st.Expedited, GlobalContext: st.GlobalContext,
			Evaluator: domain.EvaluatorFor(s.cfg.Backends, st.Stack, st.Expedited), Account: v.AccountID, BypassCache: bypass})
	if err != nil {
		return nil, err
	}
	if key != "" {
		s.cache.put(key, rep)
	}
	return rep, nil
}

// evaluationCache is a bounded LRU of evaluation reports keyed by (content
// hash, version, threshold, options). Reports are never mutated after
// evaluation, so sharing them is safe.
type evaluationCache struct {
	mu      sync.Mutex
	max     int
	ll      *list.List
	entries map[string]*list.Element
	hits    atomic.Int64
	misses  atomic.Int64
}

type evaluationCacheEntry struct {
	key string
	rep *rules.Report
}

func newEvaluationCache(max int) *evaluationCache {
	return &evaluationCache{max: max, ll: list.New(), entries: map[string]*list.Element{}}
}

func (c *evaluationCache) get(key string) (*rules.Report, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.ll.MoveToFront(e)
		c.hits.Add(1)
		return e.Value.(*evaluationCacheEntry).rep, true
	}
	c.misses.Add(1)
	return nil, false
}

func (c *evaluationCache) put(key string, rep *rules.Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.ll.MoveToFront(e)
		e.Value.(*evaluationCacheEntry).rep = rep
		return
	}
	c.entries[key] = c.ll.PushFront(&evaluationCacheEntry{key: key, rep: rep})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.entries, last.Value.(*evaluationCacheEntry).key)
	}
}
