package quality_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// shadowJobs counts the shadow jobs (in any state) queued for a policy.
func (b *bundle) shadowJobs(t *testing.T, policyID string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.GetContext(t.Context(), &n,
		b.db.Rebind("SELECT count(*) FROM jobs WHERE job_type = ? AND policy_id = ?"), string(domain.JobTypeShadow), policyID))
	return n
}

// A policy's shadow version evaluates its live jobs from the queue: each
// completed job of the sample is followed by a shadow job, and the
// workers record how the shadow's outcomes compare with the live ones.
func TestShadowEvaluations(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		p, _, err := b.policies.Create(ctx, b.mine, "violence", `LABEL "Violence" { =("kill") }`)
		require.NoError(t, err)
		shadow, err := b.policies.AddVersionAs(ctx, b.mine, p.ID, `LABEL "Violence" { ANY(=("kill"), =("hurt")) }`, domain.PolicyVersionShadow, nil)
		require.NoError(t, err)
		// A policy whose shadow samples none of its jobs.
		unsampled, _, err := b.policies.Create(ctx, b.mine, "unsampled", `LABEL "Violence" { =("kill") }`)
		require.NoError(t, err)
		_, err = b.policies.AddVersionAs(ctx, b.mine, unsampled.ID, `LABEL "Violence" { =("hurt") }`, domain.PolicyVersionShadow, ptr(0.0))
		require.NoError(t, err)

		submit := func(policyID, s string) *domain.Job {
			t.Helper()
			j, err := b.jobs.Submit(ctx, b.mine, jobs.Request{PolicyID: policyID, Content: []domain.ContentInput{text(s)}, Wait: true})
			require.NoError(t, err)
			require.Equal(t, domain.JobCompleted, j.Status)
			return j
		}
		submit(p.ID, "I will kill you") // both TRUE
		hurt := submit(p.ID, "I will hurt you")
		submit(p.ID, "hello") // both FALSE
		submit(unsampled.ID, "I will hurt you")
		// The shadow job is queued with the live job's completion.
		require.Equal(t, 3, b.shadowJobs(t, p.ID), "sample rate 1: every job")
		require.Equal(t, 0, b.shadowJobs(t, unsampled.ID), "sample rate 0: none")

		b.startWorkers(t)
		var stats *domain.ShadowStats
		waitFor(t, "three shadow evaluations", func() bool {
			stats, err = b.quality.ShadowStats(ctx, b.mine, p.ID, shadow.ID)
			require.NoError(t, err)
			return stats.Evaluated == 3
		})
		require.Equal(t, &domain.ShadowStats{Evaluated: 3, Agreements: 2, Disagreements: 1,
			Labels: []domain.ShadowLabelStats{{Label: "Violence", ActiveTrue: 1, ShadowTrue: 2, BothTrue: 1}}}, stats)

		ds, next, err := b.quality.ShadowDisagreements(ctx, b.mine, p.ID, shadow.ID, nil, "")
		require.NoError(t, err)
		require.Empty(t, next)
		require.Len(t, ds, 1)
		require.Equal(t, hurt.ID, ds[0].JobID)
		require.Equal(t, hurt.Results[0].ID, ds[0].JobResultID)
		require.Equal(t, "Violence", ds[0].Label)
		require.Equal(t, [2]rules.Outcome{rules.OutcomeFalse, rules.OutcomeTrue}, [2]rules.Outcome{ds[0].Active, ds[0].Shadow})

		// The live jobs are only read: still completed, still one result.
		live, err := b.jobs.Get(ctx, b.mine, hurt.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobCompleted, live.Status)
		require.Len(t, live.Results, 1)

		_, err = b.quality.ShadowStats(ctx, b.other, p.ID, shadow.ID)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's policy")
		_, _, err = b.quality.ShadowDisagreements(ctx, b.other, p.ID, shadow.ID, nil, "")
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's policy")
		_, err = b.quality.ShadowStats(ctx, b.mine, unsampled.ID, shadow.ID)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "a version of another policy")
	})
}
