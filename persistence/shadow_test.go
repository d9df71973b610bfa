package persistence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func TestPolicies_VersionModesAndActivate(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		accounts := persistence.NewAccounts(db)
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("a1", t0)))
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("a2", t0)))
		s := persistence.NewPolicies(db)
		p, v := newPolicy("a1", "p1", "main", t0)
		require.NoError(t, s.CreatePolicy(ctx, p, v))
		q, qv := newPolicy("a1", "p2", "other", t0)
		require.NoError(t, s.CreatePolicy(ctx, q, qv))

		add := func(id string, mode domain.PolicyVersionMode, rate float64) {
			t.Helper()
			require.NoError(t, s.AddPolicyVersion(ctx, "a1", &domain.PolicyVersion{ID: id, PolicyID: "p1", Text: "x",
				Created: t0.Add(time.Minute), Mode: mode, ShadowSampleRate: rate}))
		}
		get := func() *domain.Policy {
			t.Helper()
			got, err := s.GetPolicy(ctx, "a1", "p1")
			require.NoError(t, err)
			return got
		}
		add("draft", domain.PolicyVersionDraft, 0)
		require.Equal(t, "p1-v1", get().ActiveVersionID, "a draft changes nothing")
		require.Empty(t, get().ShadowVersionID)
		add("shadow-1", domain.PolicyVersionShadow, 0.25)
		add("shadow-2", domain.PolicyVersionShadow, 0.5)
		got := get()
		require.Equal(t, "p1-v1", got.ActiveVersionID)
		require.Equal(t, "shadow-2", got.ShadowVersionID, "one shadow per policy: the last")
		require.Equal(t, 0.5, got.ShadowSampleRate)
		add("active", "", 0)
		require.Equal(t, "active", get().ActiveVersionID)
		require.Equal(t, "shadow-2", get().ShadowVersionID, "a new active version keeps the shadow")

		// Activating a draft keeps the shadow; activating the shadow ends it.
		ap, err := s.ActivatePolicyVersion(ctx, "a1", "p1", "draft", t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, "draft", ap.ActiveVersionID)
		require.Equal(t, "shadow-2", ap.ShadowVersionID)
		require.Equal(t, persistence.StoredTime(t0.Add(time.Hour)), ap.Updated)
		ap, err = s.ActivatePolicyVersion(ctx, "a1", "p1", "shadow-2", t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, "shadow-2", ap.ActiveVersionID)
		require.Empty(t, ap.ShadowVersionID)
		require.Equal(t, ap, get())

		_, err = s.ActivatePolicyVersion(ctx, "a2", "p1", "draft", t0)
		requireCode(t, err, domain.NotFound)
		_, err = s.ActivatePolicyVersion(ctx, "a1", "p1", "p2-v1", t0)
		requireCode(t, err, domain.NotFound)
		_, err = s.ActivatePolicyVersion(ctx, "a1", "p1", "nope", t0)
		requireCode(t, err, domain.NotFound)
		require.Equal(t, "shadow-2", get().ActiveVersionID, "refused activations change nothing")
	})
}

func shadowJobOf(live *domain.Job, id string) *domain.Job {
	return &domain.Job{ID: id, AccountID: live.AccountID, Type: domain.JobTypeShadow, Status: domain.JobPending,
		PolicyID: live.PolicyID, PolicyVersionID: "shadow-v", Threshold: 0.5,
		Options: map[string]string{domain.ShadowOfOption: live.ID}, Created: t0, Updated: t0}
}

// TestJobs_ThenQueuedWithTheCompletion: the jobs that follow a completion
// are queued in its transaction, on both write paths, and only when the
// job completed.
func TestJobs_ThenQueuedWithTheCompletion(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		jobs := persistence.NewJobs(db)
		done := t0.Add(time.Second)
		finished := func(id string, status domain.JobStatus) *domain.Job {
			j := &domain.Job{ID: id, AccountID: "a1", Type: domain.JobTypeStandard, Status: status, PolicyID: "p",
				Threshold: 0.5, Created: t0, Updated: t0, Completed: &done,
				Input: []domain.ContentItem{{Kind: domain.ContentText, Text: "hello"}}}
			j.Then = []*domain.Job{shadowJobOf(j, id+"-shadow")}
			return j
		}
		result := func(id string) []*domain.JobResult {
			return []*domain.JobResult{{ID: id + "-r", JobID: id, Report: &rules.Report{Result: rules.OutcomeFalse}, Created: t0}}
		}
		// The fast path: one write.
		require.NoError(t, jobs.CreateFinishedJob(ctx, finished("fast", domain.JobCompleted), result("fast"), nil))
		require.NoError(t, jobs.CreateFinishedJob(ctx, finished("fast-failed", domain.JobFailed), nil, nil))
		// The queued path: FinishJob of a claimed job.
		for _, id := range []string{"queued", "queued-failed", "queued-lost"} {
			require.NoError(t, jobs.CreateJob(ctx, &domain.Job{ID: id, AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobPending,
				PolicyID: "p", Threshold: 0.5, Created: t0, Updated: t0}))
		}
		claimed, err := jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 4, "the three and the fast job's shadow")
		q := finished("queued", domain.JobCompleted)
		require.NoError(t, jobs.FinishJob(ctx, "queued", "w", domain.JobCompleted, done, nil, result("queued"), nil, q.Then...))

		require.NoError(t, jobs.FinishJob(ctx, "queued-failed", "w", domain.JobFailed, done, &domain.ErrJobInternal, nil, nil))
		ql := finished("queued-lost", domain.JobCompleted)
		requireCode(t, jobs.FinishJob(ctx, "queued-lost", "someone-else", domain.JobCompleted, done, nil, result("queued-lost"), nil, ql.Then...), domain.Aborted)

		// The shadow jobs are claimable work, never shown: the two that
		// follow a completion were queued, the others not.
		shadows := map[string]*domain.Job{}
		for _, j := range claimed {
			if j.Type == domain.JobTypeShadow {
				shadows[j.ID] = j
			}
		}
		claimed, err = jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		shadows[claimed[0].ID] = claimed[0]
		require.Len(t, shadows, 2)
		for _, id := range []string{"fast-shadow", "queued-shadow"} {
			require.Contains(t, shadows, id)
			require.Equal(t, map[string]string{domain.ShadowOfOption: id[:len(id)-len("-shadow")]}, shadows[id].Options)
			_, err := jobs.GetJob(ctx, "a1", id)
			requireCode(t, err, domain.NotFound)
		}
		listed, err := jobs.ListJobs(ctx, "a1", domain.JobFilter{}, nil, 100)
		require.NoError(t, err)
		require.Len(t, listed, 5)
		for _, j := range listed {
			require.Equal(t, domain.JobTypeStandard, j.Type)
		}
	})
}

func TestShadows_FinishStatsDisagreements(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		accounts := persistence.NewAccounts(db)
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("a1", t0)))
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("a2", t0)))
		jobs := persistence.NewJobs(db)
		store := persistence.NewShadows(db)
		live := &domain.Job{ID: "live", AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobPending, PolicyID: "p",
			Threshold: 0.5, Created: t0, Updated: t0}
		require.NoError(t, jobs.CreateJob(ctx, live))
		for _, id := range []string{"s1", "s2"} {
			require.NoError(t, jobs.CreateJob(ctx, shadowJobOf(live, id)))
		}
		claimed, err := jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 3)

		T, F, U, X := rules.OutcomeTrue, rules.OutcomeFalse, rules.OutcomeUnspecified, rules.OutcomeFailed
		eval := func(result string, labels ...domain.ShadowLabelOutcome) *domain.ShadowEvaluation {
			e := &domain.ShadowEvaluation{ShadowVersionID: "shadow-v", JobResultID: result, AccountID: "a1", PolicyID: "p",
				ActiveVersionID: "v1", JobID: "live", JobCreated: t0, ContentHash: "sha256::" + result, Created: t0}
			for _, l := range labels {
				l.Disagrees = domain.ShadowOutcomesDisagree(l.Active, l.Shadow)
				e.Disagrees = e.Disagrees || l.Disagrees
				e.Labels = append(e.Labels, l)
			}
			return e
		}
		lo := func(label string, a, s rules.Outcome) domain.ShadowLabelOutcome {
			return domain.ShadowLabelOutcome{Label: label, Active: a, Shadow: s}
		}
		evals := []*domain.ShadowEvaluation{
			eval("r0"),                   // nothing notable: agree
			eval("r1", lo("Spam", T, T)), // agree
			eval("r2", lo("Spam", F, T), lo("Scam", U, T)),   // disagree twice
			eval("r3", lo("Spam", T, F), lo("Threat", X, X)), // disagree once; FAILED both agree
		}
		// One statement finishes the jobs of a call, each under its own
		// owner: s1 is held by w, not by someone-else.
		n, err := store.FinishShadowJobs(ctx, []domain.ShadowFinish{
			{JobID: "s1", Owner: "someone-else", Evaluations: evals},
			{JobID: "s2", Owner: "w"}, // a dropped evaluation stores nothing
		}, t0)
		require.NoError(t, err)
		require.Equal(t, 1, n, "a job held by another is skipped, its evaluations with it")
		n, err = store.FinishShadowJobs(ctx, []domain.ShadowFinish{
			{JobID: "s1", Owner: "w", Evaluations: evals},
			{JobID: "s2", Owner: "w"},
		}, t0)
		require.NoError(t, err)
		require.Equal(t, 1, n, "s2 is finished already")
		n, err = store.FinishShadowJobs(ctx, []domain.ShadowFinish{{JobID: "s1", Owner: "w", Evaluations: evals}}, t0)
		require.NoError(t, err)
		require.Zero(t, n, "finished once")

		st, err := store.ShadowStats(ctx, "a1", "shadow-v", []string{"Threat", "Spam", "Scam", "Quiet"})
		require.NoError(t, err)
		require.Equal(t, &domain.ShadowStats{Evaluated: 4, Agreements: 2, Disagreements: 2, Labels: []domain.ShadowLabelStats{
			{Label: "Quiet"},
			{Label: "Scam", ActiveTrue: 0, ShadowTrue: 1, BothTrue: 0},
			{Label: "Spam", ActiveTrue: 2, ShadowTrue: 2, BothTrue: 1},
			{Label: "Threat"},
		}}, st)
		other, err := store.ShadowStats(ctx, "a2", "shadow-v", nil)
		require.NoError(t, err)
		require.Zero(t, other.Evaluated)
		require.Empty(t, other.Labels)

		var got []string
		var after *domain.ShadowCursor
		for {
			page, err := store.ListShadowDisagreements(ctx, "a1", "shadow-v", after, 2)
			require.NoError(t, err)
			for _, r := range page {
				require.Equal(t, "live", r.JobID)
				require.Equal(t, "sha256::"+r.JobResultID, r.ContentHash)
				got = append(got, fmt.Sprintf("%s/%s %s>%s", r.JobResultID, r.Label, r.Active, r.Shadow))
			}
			if len(page) < 2 {
				break
			}
			after = &domain.ShadowCursor{JobResultID: page[1].JobResultID, Label: page[1].Label}
		}
		require.Equal(t, []string{"r2/Scam OUTCOME_UNSPECIFIED>OUTCOME_TRUE", "r2/Spam OUTCOME_FALSE>OUTCOME_TRUE", "r3/Spam OUTCOME_TRUE>OUTCOME_FALSE"}, got)
		none, err := store.ListShadowDisagreements(ctx, "a2", "shadow-v", nil, 10)
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

// TestShadows_YieldKeepsEvaluations: a shadow job given back part-way
// stores its evaluations so far and is queued again with the options that
// say where the rest starts, the claim not counted as an attempt; only its
// holder can give it back.
func TestShadows_YieldKeepsEvaluations(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		jobs := persistence.NewJobs(db)
		store := persistence.NewShadows(db)
		live := &domain.Job{ID: "live", AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobCompleted, PolicyID: "p",
			Threshold: 0.5, Created: t0, Updated: t0}
		require.NoError(t, jobs.CreateJob(ctx, live))
		require.NoError(t, jobs.CreateJob(ctx, shadowJobOf(live, "s1")))
		claimed, err := jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1)

		evals := []*domain.ShadowEvaluation{{ShadowVersionID: "shadow-v", JobResultID: "r0", AccountID: "a1", PolicyID: "p",
			ActiveVersionID: "v1", JobID: "live", JobCreated: t0, ContentHash: "sha256::r0", Created: t0,
			Labels:    []domain.ShadowLabelOutcome{{Label: "Spam", Active: rules.OutcomeFalse, Shadow: rules.OutcomeTrue, Disagrees: true}},
			Disagrees: true}}
		options := map[string]string{domain.ShadowOfOption: "live", domain.ShadowFromOption: "1"}
		err = store.YieldShadowJob(ctx, domain.ShadowFinish{JobID: "s1", Owner: "someone-else", Evaluations: evals}, options, t0)
		require.Equal(t, domain.Aborted, domain.ErrorCode(err), "only the holder gives a job back")
		st, err := store.ShadowStats(ctx, "a1", "shadow-v", nil)
		require.NoError(t, err)
		require.Zero(t, st.Evaluated, "nothing stored by a refused yield")

		require.NoError(t, store.YieldShadowJob(ctx, domain.ShadowFinish{JobID: "s1", Owner: "w", Evaluations: evals}, options, t0))
		st, err = store.ShadowStats(ctx, "a1", "shadow-v", nil)
		require.NoError(t, err)
		require.Equal(t, 1, st.Evaluated)
		require.Equal(t, 1, st.Disagreements)

		claimed, err = jobs.ClaimJobs(ctx, "w2", t0, t0.Add(time.Hour), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1, "queued again")
		// GetJob hides internal jobs: the claim shows what the yield stored.
		got := claimed[0]
		require.Equal(t, options, got.Options)
		require.Equal(t, 1, got.Attempts, "a yield is not an attempt: this claim is the first that counts")
		require.Equal(t, 1, got.Yields)
	})
}
