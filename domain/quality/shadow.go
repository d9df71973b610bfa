package quality

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/rules"
)

// maxShadowAttempts is how many claims of a shadow job may end in an error
// before it is dropped: a shadow evaluation is a sample, and one that keeps
// failing must not keep a worker busy.
const maxShadowAttempts = 3

// Shadow disagreement page sizes.
const (
	defaultShadowPage = 100
	maxShadowPage     = 1000
)

// runShadows is the task of the shadow jobs of one claim: it evaluates
// each live job's content with its shadow version through the item
// runner, compares every label with the live outcomes recorded with the
// shadow job, and stores the comparisons as it finishes the shadow jobs,
// in one transaction. The live jobs, their results, hits and webhooks are
// only read.
//
// Before each item but the claim's first (every claim makes progress),
// the worker may be owed to another account (jobs.Service.ShouldYield): a
// shadow job of a hundred costly items would otherwise keep it as long as
// a queued job of them. The job under way is then queued again with its
// evaluations so far, and the rest of the group as it was.
func (s *Service) runShadows(ctx context.Context, js []*domain.Job, runner *evaluation.ItemRunner) error {
	finishes := make([]domain.ShadowFinish, 0, len(js))
	started := 0 // items this claim began
	stop := func(j *domain.Job) bool {
		if started > 0 && s.d.Jobs.ShouldYield(ctx, j) {
			return true
		}
		started++
		return false
	}
	var yielded *shadowPart
	for i, j := range js {
		// Each job starts in a gap between live evaluations, not only the
		// group (the worker waited for one before the first): a live request
		// arriving mid-group then overlaps one shadow evaluation (~0.5 ms of
		// CPU), not the rest of the group.
		if i > 0 {
			s.d.Jobs.YieldToLive(ctx)
		}
		evals, next, err := s.shadowEvaluations(ctx, j, runner, stop)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return err
		case domain.ErrorCode(err) == domain.NotFound:
			// The live job (or a version) is gone: no attempt can find it.
			s.d.Log.Warn("shadow evaluation dropped", "job", j.ID, "error", err.Error())
			evals, next = nil, -1
		case j.Attempts < maxShadowAttempts:
			// Queued again for another attempt (the claim counted it): this
			// worker is alive and done with it, so its lease's expiry would
			// only delay the retry.
			s.d.Log.Warn("shadow evaluation failed; it will be retried", "job", j.ID, "attempt", j.Attempts, "error", err.Error())
			s.releaseShadow(j)
			continue
		default:
			s.d.Log.Error("shadow evaluation dropped", "job", j.ID, "attempts", j.Attempts, "error", err.Error())
			evals, next = nil, -1
		}
		if next >= 0 {
			yielded = &shadowPart{job: j, evals: evals, next: next, rest: js[i+1:]}
			break
		}
		finishes = append(finishes, domain.ShadowFinish{JobID: j.ID, Owner: j.LeaseOwner, Evaluations: evals})
	}
	// The jobs given up go back first: a failing write of the finished
	// ones must not leave them to their leases' expiry too.
	if yielded != nil {
		s.yieldShadows(yielded)
	}
	if len(finishes) == 0 {
		return nil
	}
	// The write, too, waits for a gap: on SQLite it would hold the one
	// write lock a synchronous job's write waits for.
	s.d.Jobs.YieldToLive(ctx)
	_, err := s.d.Shadows.FinishShadowJobs(ctx, finishes, s.d.Clock.Now())
	return err
}

// shadowPart is where a claim of shadow jobs gave its worker up: the job
// under way, its evaluations in this claim, the index of its first live
// result not evaluated, and the jobs of the group not begun.
type shadowPart struct {
	job   *domain.Job
	evals []*domain.ShadowEvaluation
	next  int
	rest  []*domain.Job
}

// yieldShadows returns the shadow jobs of p to the queue, their claim not
// counted as an attempt: the job under way with its evaluations, to go on
// from p.next, the others as they were. A job whose yield cannot be
// written is released as it was claimed (its evaluations of this claim
// lost, the claim an attempt); only when that fails too does it keep its
// lease until it expires.
func (s *Service) yieldShadows(p *shadowPart) {
	// Not the task's context: a yield decided just before the process's
	// shutdown still records what was evaluated.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	options := make(map[string]string, len(p.job.Options)+1)
	for k, v := range p.job.Options {
		options[k] = v
	}
	options[domain.ShadowFromOption] = strconv.Itoa(p.next)
	err := s.d.Shadows.YieldShadowJob(ctx, domain.ShadowFinish{JobID: p.job.ID, Owner: p.job.LeaseOwner, Evaluations: p.evals}, options, s.d.Clock.Now())
	if err != nil && domain.ErrorCode(err) != domain.Aborted {
		s.d.Log.Warn("yielding a shadow job to another account; releasing it", "job", p.job.ID, "error", err.Error())
		s.releaseShadow(p.job)
	}
	for _, j := range p.rest {
		err := s.d.JobStore.YieldJob(ctx, j.ID, j.LeaseOwner, s.d.Clock.Now(), nil, nil)
		if err != nil && domain.ErrorCode(err) != domain.Aborted {
			s.d.Log.Warn("yielding a shadow job to another account; releasing it", "job", j.ID, "error", err.Error())
			s.releaseShadow(j)
		}
	}
}

// releaseShadow puts shadow job j, which this worker gives up, back in the
// queue as it was claimed. When that fails too, j keeps its lease until it
// expires and is claimed again then.
func (s *Service) releaseShadow(j *domain.Job) {
	// Not the task's context, as for a yield.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.d.JobStore.ReleaseJob(ctx, j.ID, j.LeaseOwner, s.d.Clock.Now())
	if err != nil && domain.ErrorCode(err) != domain.Aborted {
		s.d.Log.Warn("releasing a shadow job; it will be retried after its lease expires", "job", j.ID, "error", err.Error())
	}
}

// shadowEvaluations evaluates the live results of shadow job j from the
// first one a former claim did not evaluate. stop is asked before each
// item: when it answers true, the evaluations so far are returned with
// the index of the item not evaluated; next is -1 when all were.
func (s *Service) shadowEvaluations(ctx context.Context, j *domain.Job, runner *evaluation.ItemRunner, stop func(*domain.Job) bool) (out []*domain.ShadowEvaluation, next int, err error) {
	active, err := jobs.DecodeShadowActive(j.Options[domain.ShadowActiveOption])
	if err != nil {
		return nil, 0, fmt.Errorf("shadow job %s: the live outcomes: %w", j.ID, err)
	}
	from := 0
	if f, ok := j.Options[domain.ShadowFromOption]; ok {
		if from, err = strconv.Atoi(f); err != nil || from < 0 || from > len(active) {
			return nil, 0, fmt.Errorf("shadow job %s: bad %s option %q", j.ID, domain.ShadowFromOption, f)
		}
	}
	live, err := s.d.JobStore.GetJob(ctx, j.AccountID, j.Options[domain.ShadowOfOption])
	if err != nil {
		return nil, 0, err
	}
	if len(active) != len(live.Input) {
		return nil, 0, fmt.Errorf("shadow job %s: job %s has %d results for %d items", j.ID, live.ID, len(active), len(live.Input))
	}
	_, activePlan, err := s.d.Policies.Plan(ctx, live.PolicyID, live.PolicyVersionID)
	if err != nil {
		return nil, 0, err
	}
	_, shadowPlan, err := s.d.Policies.Plan(ctx, j.PolicyID, j.PolicyVersionID)
	if err != nil {
		return nil, 0, err
	}
	cmp := newComparison(activePlan.Labels(), shadowPlan.Labels())
	// The shadow is scored as the live job was: by the backend its
	// options named.
	eval := evaluation.PolicyEvaluator(shadowPlan, live, s.d.Backends)
	now := s.d.Clock.Now()
	out = make([]*domain.ShadowEvaluation, 0, len(active)-from)
	for i := from; i < len(active); i++ {
		if stop(j) {
			return out, i, nil
		}
		a := active[i]
		it := evaluation.JobItem(live, i)
		it.JobID = j.ID
		seq := 0
		res, _, err := runner.Run(ctx, it, eval, &seq)
		var shadow *rules.Report
		if _, ok := evaluation.AsItemError(err); !ok && err != nil {
			return nil, 0, err
		} else if err == nil {
			shadow = res.Report
		}
		e := &domain.ShadowEvaluation{
			ShadowVersionID: j.PolicyVersionID, JobResultID: a.ResultID, AccountID: j.AccountID, PolicyID: j.PolicyID,
			ActiveVersionID: live.PolicyVersionID, JobID: live.ID, JobCreated: live.Created, ContentHash: a.ContentHash, Created: now,
		}
		e.Labels, e.Disagrees = cmp.compare(a.Outcomes, shadow)
		out = append(out, e)
	}
	return out, -1, nil
}

// comparison compares the outcomes of two versions label by label.
type comparison struct {
	labels         []string // the active version's, then the shadow's new ones
	active, shadow map[string]bool
}

func newComparison(active, shadow []string) *comparison {
	c := &comparison{active: map[string]bool{}, shadow: map[string]bool{}}
	for _, l := range active {
		c.active[l] = true
		c.labels = append(c.labels, l)
	}
	for _, l := range shadow {
		c.shadow[l] = true
		if !c.active[l] {
			c.labels = append(c.labels, l)
		}
	}
	return c
}

// compare returns the notable labels of a result (live outcomes other than
// FALSE in active; shadow nil when the shadow could not evaluate the item:
// FAILED for each of its labels) and whether any label disagrees.
func (c *comparison) compare(active map[string]rules.Outcome, shadow *rules.Report) ([]domain.ShadowLabelOutcome, bool) {
	sh := map[string]rules.Outcome{}
	if shadow != nil {
		for _, sec := range shadow.Sections {
			sh[sec.Name] = sec.Result
		}
	}
	var out []domain.ShadowLabelOutcome
	disagrees := false
	for _, l := range c.labels {
		ao, so := rules.OutcomeUnspecified, rules.OutcomeUnspecified
		if c.active[l] {
			ao = rules.OutcomeFalse
			if o, ok := active[l]; ok {
				ao = o
			}
		}
		if c.shadow[l] {
			so = rules.OutcomeFailed
			if shadow != nil {
				so = rules.OutcomeFalse
				if o, ok := sh[l]; ok {
					so = o
				}
			}
		}
		if !domain.ShadowNotable(ao, so) {
			continue
		}
		d := domain.ShadowOutcomesDisagree(ao, so)
		disagrees = disagrees || d
		out = append(out, domain.ShadowLabelOutcome{Label: l, Active: ao, Shadow: so, Disagrees: d})
	}
	return out, disagrees
}

// shadowVersion checks that versionID is a version of the account's
// policy and returns its labels. Codes: NOT_FOUND.
func (s *Service) shadowVersion(ctx context.Context, account *domain.Account, policyID, versionID string) ([]string, error) {
	if _, err := s.d.Policies.Get(ctx, account, policyID); err != nil {
		return nil, domain.DescribeNotFound(err, "policy %q not found", policyID)
	}
	_, plan, err := s.d.Policies.Plan(ctx, policyID, versionID)
	if err != nil {
		return nil, domain.DescribeNotFound(err, "policy version %q of policy %q not found", versionID, policyID)
	}
	return plan.Labels(), nil
}

// ShadowStats summarises a version's shadow evaluations: job results
// evaluated, agreeing in every label or not, and per label how often each
// version found it TRUE. A version never shadowed has none. Codes:
// NOT_FOUND (policy, version).
func (s *Service) ShadowStats(ctx context.Context, account *domain.Account, policyID, versionID string) (*domain.ShadowStats, error) {
	labels, err := s.shadowVersion(ctx, account, policyID, versionID)
	if err != nil {
		return nil, err
	}
	return s.d.Shadows.ShadowStats(ctx, account.ID, versionID, labels)
}

// ShadowDisagreements returns a page of a version's shadow evaluations
// whose outcome differs from the live one, by job result and label.
// Codes: NOT_FOUND (policy, version), INVALID_ARGUMENT (page size, token).
func (s *Service) ShadowDisagreements(ctx context.Context, account *domain.Account, policyID, versionID string, pageSize *int32, pageToken string) ([]*domain.ShadowDisagreement, string, error) {
	q := paging.Query{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: defaultShadowPage, Max: maxShadowPage, Scope: "shadowResults\x00" + account.ID + "\x00" + policyID + "\x00" + versionID}
	check := func() error {
		_, err := s.shadowVersion(ctx, account, policyID, versionID)
		return err
	}
	return paging.Keyset(s.d.Tokens, q, check, func(after *domain.ShadowCursor, limit int) ([]*domain.ShadowDisagreement, error) {
		return s.d.Shadows.ListShadowDisagreements(ctx, account.ID, versionID, after, limit)
	}, func(r *domain.ShadowDisagreement) domain.ShadowCursor {
		return domain.ShadowCursor{JobResultID: r.JobResultID, Label: r.Label}
	})
}
