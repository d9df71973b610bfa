package quality

import (
	"context"
	"fmt"
	"time"

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

// runShadow is the task of a shadow job: it evaluates the live job's
// content with the shadow version through the item runner, compares every
// label with the live result, and stores the comparison as it finishes the
// shadow job. The live job, its results, hits and webhooks are only read.
func (s *Service) runShadow(ctx context.Context, j *domain.Job, runner *jobs.ItemRunner) error {
	results, err := s.shadowResults(ctx, j, runner)
	if err != nil {
		if ctx.Err() != nil || j.Attempts < maxShadowAttempts {
			return err
		}
		s.d.Log.Error("shadow evaluation dropped", "job", j.ID, "attempts", j.Attempts, "error", err.Error())
		results = nil
	}
	return s.d.Shadows.FinishShadowJob(ctx, j.ID, j.LeaseOwner, results, s.d.Clock.Now())
}

func (s *Service) shadowResults(ctx context.Context, j *domain.Job, runner *jobs.ItemRunner) ([]*domain.ShadowResult, error) {
	live, err := s.d.JobStore.GetJob(ctx, j.AccountID, j.Options[domain.ShadowOfOption])
	if err != nil {
		return nil, err
	}
	if live.Status != domain.JobCompleted {
		return nil, fmt.Errorf("shadow job %s follows job %s, which is %s", j.ID, live.ID, live.Status)
	}
	active, err := s.d.JobStore.ListJobResults(ctx, live.ID)
	if err != nil {
		return nil, err
	}
	if len(active) != len(live.Input) {
		return nil, fmt.Errorf("shadow job %s: job %s has %d results for %d items", j.ID, live.ID, len(active), len(live.Input))
	}
	_, plan, err := s.d.Policies.Plan(ctx, j.PolicyID, j.PolicyVersionID)
	if err != nil {
		return nil, err
	}
	eval := jobs.PlanEvaluator(plan, live)
	now := s.d.Clock.Now()
	var out []*domain.ShadowResult
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
		out = append(out, compareReports(j, live, a, shadow, now)...)
	}
	return out, nil
}

// compareReports compares each label of the active result a with the
// shadow's report (nil when the shadow could not evaluate the item: every
// label FAILED).
func compareReports(j, live *domain.Job, a *domain.JobResult, shadow *rules.Report, now time.Time) []*domain.ShadowResult {
	outcomes := func(rep *rules.Report) map[string]rules.Outcome {
		m := map[string]rules.Outcome{}
		if rep != nil {
			for _, sec := range rep.Sections {
				m[sec.Name] = sec.Result
			}
		}
		return m
	}
	act, sh := outcomes(a.Report), outcomes(shadow)
	// The labels of both versions: the active report's in order, then the
	// shadow's new ones.
	var names []string
	seen := map[string]bool{}
	for _, rep := range []*rules.Report{a.Report, shadow} {
		if rep == nil {
			continue
		}
		for _, sec := range rep.Sections {
			if !seen[sec.Name] {
				names = append(names, sec.Name)
				seen[sec.Name] = true
			}
		}
	}
	out := make([]*domain.ShadowResult, 0, len(names))
	for _, name := range names {
		ao, so := act[name], sh[name]
		if ao == "" {
			ao = rules.OutcomeUnspecified
		}
		switch {
		case shadow == nil:
			so = rules.OutcomeFailed
		case so == "":
			so = rules.OutcomeUnspecified
		}
		out = append(out, &domain.ShadowResult{
			ShadowVersionID: j.PolicyVersionID, JobResultID: a.ID, Label: name, AccountID: j.AccountID,
			PolicyID: j.PolicyID, ActiveVersionID: live.PolicyVersionID, JobID: live.ID, JobCreated: live.Created,
			ContentHash: a.ContentHash, Active: ao, Shadow: so, Disagrees: domain.ShadowOutcomesDisagree(ao, so), Created: now,
		})
	}
	return out
}

// shadowVersion checks that versionID is a version of the account's
// policy. Codes: NOT_FOUND.
func (s *Service) shadowVersion(ctx context.Context, account *domain.Account, policyID, versionID string) error {
	if _, err := s.d.Policies.Get(ctx, account, policyID); err != nil {
		return domain.DescribeNotFound(err, "policy %q not found", policyID)
	}
	if _, _, err := s.d.Policies.Plan(ctx, policyID, versionID); err != nil {
		return domain.DescribeNotFound(err, "policy version %q of policy %q not found", versionID, policyID)
	}
	return nil
}

// ShadowStats summarises a version's shadow evaluations: job results
// evaluated, agreeing in every label or not, and per label how often each
// version found it TRUE. A version never shadowed has none. Codes:
// NOT_FOUND (policy, version).
func (s *Service) ShadowStats(ctx context.Context, account *domain.Account, policyID, versionID string) (*domain.ShadowStats, error) {
	if err := s.shadowVersion(ctx, account, policyID, versionID); err != nil {
		return nil, err
	}
	return s.d.Shadows.ShadowStats(ctx, account.ID, versionID)
}

// ShadowDisagreements returns a page of a version's shadow evaluations
// whose outcome differs from the live one, by job result and label.
// Codes: NOT_FOUND (policy, version), INVALID_ARGUMENT (page size, token).
func (s *Service) ShadowDisagreements(ctx context.Context, account *domain.Account, policyID, versionID string, pageSize *int32, pageToken string) ([]*domain.ShadowResult, string, error) {
	q := domain.PageQuery{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: defaultShadowPage, Max: maxShadowPage, Scope: "shadowResults\x00" + account.ID + "\x00" + policyID + "\x00" + versionID}
	check := func() error { return s.shadowVersion(ctx, account, policyID, versionID) }
	return domain.KeysetPage(s.d.Tokens, q, check, func(after *domain.ShadowCursor, limit int) ([]*domain.ShadowResult, error) {
		return s.d.Shadows.ListShadowDisagreements(ctx, account.ID, versionID, after, limit)
	}, func(r *domain.ShadowResult) domain.ShadowCursor {
		return domain.ShadowCursor{JobResultID: r.JobResultID, Label: r.Label}
	})
}
