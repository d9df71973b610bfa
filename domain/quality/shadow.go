package quality

import (
	"context"
	"fmt"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
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
func (s *Service) runShadows(ctx context.Context, js []*domain.Job, runner *jobs.ItemRunner) error {
	finishes := make([]domain.ShadowFinish, 0, len(js))
	for i, j := range js {
		// Each job starts in a gap between live evaluations, not only the
		// group (the worker waited for one before the first): a live request
		// arriving mid-group then overlaps one shadow evaluation (~0.5 ms of
		// CPU), not the rest of the group.
		if i > 0 {
			s.d.Jobs.YieldToLive(ctx)
		}
		evals, err := s.shadowEvaluations(ctx, j, runner)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return err
		case domain.ErrorCode(err) == domain.NotFound:
			// The live job (or a version) is gone: no attempt can find it.
			s.d.Log.Warn("shadow evaluation dropped", "job", j.ID, "error", err.Error())
			evals = nil
		case j.Attempts < maxShadowAttempts:
			// Left to its lease's expiry and another attempt.
			s.d.Log.Warn("shadow evaluation failed; it will be retried", "job", j.ID, "attempt", j.Attempts, "error", err.Error())
			continue
		default:
			s.d.Log.Error("shadow evaluation dropped", "job", j.ID, "attempts", j.Attempts, "error", err.Error())
			evals = nil
		}
		finishes = append(finishes, domain.ShadowFinish{JobID: j.ID, Owner: j.LeaseOwner, Evaluations: evals})
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

func (s *Service) shadowEvaluations(ctx context.Context, j *domain.Job, runner *jobs.ItemRunner) ([]*domain.ShadowEvaluation, error) {
	active, err := domain.DecodeShadowActive(j.Options[domain.ShadowActiveOption])
	if err != nil {
		return nil, fmt.Errorf("shadow job %s: the live outcomes: %w", j.ID, err)
	}
	live, err := s.d.JobStore.GetJob(ctx, j.AccountID, j.Options[domain.ShadowOfOption])
	if err != nil {
		return nil, err
	}
	if len(active) != len(live.Input) {
		return nil, fmt.Errorf("shadow job %s: job %s has %d results for %d items", j.ID, live.ID, len(active), len(live.Input))
	}
	_, activePlan, err := s.d.Policies.Plan(ctx, live.PolicyID, live.PolicyVersionID)
	if err != nil {
		return nil, err
	}
	_, shadowPlan, err := s.d.Policies.Plan(ctx, j.PolicyID, j.PolicyVersionID)
	if err != nil {
		return nil, err
	}
	cmp := newComparison(activePlan.Labels(), shadowPlan.Labels())
	// The shadow is scored as the live job was: by the backend its
	// options named.
	eval := jobs.PlanEvaluator(shadowPlan, live, s.d.Backends)
	now := s.d.Clock.Now()
	out := make([]*domain.ShadowEvaluation, len(active))
	for i, a := range active {
		it := jobs.JobItem(live, i)
		it.JobID = j.ID
		seq := 0
		res, _, err := runner.Run(ctx, it, eval, &seq)
		var shadow *rules.Report
		if _, ok := jobs.AsItemError(err); !ok && err != nil {
			return nil, err
		} else if err == nil {
			shadow = res.Report
		}
		e := &domain.ShadowEvaluation{
			ShadowVersionID: j.PolicyVersionID, JobResultID: a.ResultID, AccountID: j.AccountID, PolicyID: j.PolicyID,
			ActiveVersionID: live.PolicyVersionID, JobID: live.ID, JobCreated: live.Created, ContentHash: a.ContentHash, Created: now,
		}
		e.Labels, e.Disagrees = cmp.compare(a.Outcomes, shadow)
		out[i] = e
	}
	return out, nil
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
	q := domain.PageQuery{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: defaultShadowPage, Max: maxShadowPage, Scope: "shadowResults\x00" + account.ID + "\x00" + policyID + "\x00" + versionID}
	check := func() error {
		_, err := s.shadowVersion(ctx, account, policyID, versionID)
		return err
	}
	return domain.KeysetPage(s.d.Tokens, q, check, func(after *domain.ShadowCursor, limit int) ([]*domain.ShadowDisagreement, error) {
		return s.d.Shadows.ListShadowDisagreements(ctx, account.ID, versionID, after, limit)
	}, func(r *domain.ShadowDisagreement) domain.ShadowCursor {
		return domain.ShadowCursor{JobResultID: r.JobResultID, Label: r.Label}
	})
}
