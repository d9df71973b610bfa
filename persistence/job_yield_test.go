package persistence_test

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestJobs_QueueLoad checks the load a running job's worker decides on:
// every account with live leases or claimable jobs, its running jobs (any
// owner's, and the asker's apart), whether it has claimable ones; an
// expired lease is claimable work, not running work; finished jobs count
// for nothing.
func TestJobs_QueueLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		jobs []queuedJob
		done []string // accounts with a completed job only
		want []domain.AccountLoad
	}{{
		name: "empty queue",
		done: []string{"a"},
		want: []domain.AccountLoad{},
	}, {
		name: "running and queued accounts",
		jobs: []queuedJob{
			{id: "a-run1", account: "a", owner: "w"}, {id: "a-run2", account: "a", owner: "x"}, {id: "a1", account: "a", at: 1},
			{id: "b1", account: "b", at: 2}, {id: "c-run", account: "c", owner: "w"},
		},
		done: []string{"d"},
		want: []domain.AccountLoad{
			{AccountID: "a", Running: 2, Mine: 1, Queued: true},
			{AccountID: "b", Queued: true},
			{AccountID: "c", Running: 1, Mine: 1},
		},
	}, {
		name: "an expired lease is queued work",
		jobs: []queuedJob{{id: "a-dead", account: "a", owner: "w", expired: true}, {id: "b-run", account: "b", owner: "x"}},
		want: []domain.AccountLoad{{AccountID: "a", Queued: true}, {AccountID: "b", Running: 1}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
				ctx := t.Context()
				q := newQueueFixture(t, db)
				for _, j := range tc.jobs {
					q.add(j)
				}
				for _, a := range tc.done {
					q.account(a)
					j := &domain.Job{ID: a + "-done", AccountID: a, Type: domain.JobTypeStandard, Status: domain.JobCompleted,
						Threshold: 0.5, Created: t0, Updated: t0, Completed: &t0}
					require.NoError(t, q.store.CreateJob(ctx, j))
				}
				got, err := q.store.QueueLoad(ctx, "w", q.now)
				require.NoError(t, err)
				sort.Slice(got, func(i, k int) bool { return got[i].AccountID < got[k].AccountID })
				require.ElementsMatch(t, tc.want, got)
			})
		})
	}
}

// TestJobs_YieldKeepsProgress: a job that yields its worker goes back to
// the queue with the results and hits of its finished items stored, its
// attempts as before the claim; claimed again, it reads them back (and the
// next hit's Seq) and finishes with the rest.
func TestJobs_YieldKeepsProgress(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		claimedAt := t0.Add(time.Second)
		b.claimedJob(t, "j", "w", claimedAt)

		r0 := &domain.JobResult{ID: "r0", JobID: "j", Index: 0, ContentHash: "sha256::aa", Created: claimedAt}
		hits := []*domain.LabelHit{
			{JobID: "j", JobResultID: "r0", Seq: 0, Label: "A", Modality: domain.ModalityText, Score: 1},
			{JobID: "j", JobResultID: "r0", Seq: 1, Label: "B", Modality: domain.ModalityText, Score: 1},
		}
		requireCode(t, b.jobs.YieldJob(ctx, "j", "other", claimedAt, []*domain.JobResult{r0}, hits), domain.Aborted)
		require.NoError(t, b.jobs.YieldJob(ctx, "j", "w", claimedAt, []*domain.JobResult{r0}, hits))
		j, err := b.jobs.GetJob(ctx, b.account.ID, "j")
		require.NoError(t, err)
		require.Equal(t, domain.JobPending, j.Status)
		require.Zero(t, j.Attempts, "the yielded claim is not an attempt")
		require.Empty(t, j.LeaseOwner)

		again := claimedAt.Add(time.Second)
		got, err := b.jobs.ClaimJobs(ctx, "x", again, again.Add(time.Minute), 1, 0)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, 1, got[0].Attempts)
		require.Equal(t, 1, got[0].Yields, "its first results are stored")

		results, nextSeq, err := b.jobs.JobProgress(ctx, "j")
		require.NoError(t, err)
		require.Len(t, results, 1)
		require.Equal(t, "r0", results[0].ID)
		require.Equal(t, 2, nextSeq)

		r1 := &domain.JobResult{ID: "r1", JobID: "j", Index: 1, ContentHash: "sha256::bb", Created: again}
		h1 := []*domain.LabelHit{{JobID: "j", JobResultID: "r1", Seq: 2, Label: "A", Modality: domain.ModalityText, Score: 1}}
		require.NoError(t, b.jobs.FinishJob(ctx, "j", "x", domain.JobCompleted, again, nil, []*domain.JobResult{r1}, h1))
		all, err := b.jobs.ListJobResults(ctx, "j")
		require.NoError(t, err)
		require.Len(t, all, 2)
		hs, err := b.jobs.ListLabelHits(ctx, "j", "", -1, 10)
		require.NoError(t, err)
		require.Len(t, hs, 3)
	})
}

// TestJobs_ProgressOfAJobNeverYielded: no results, first hit Seq 0.
func TestJobs_ProgressOfAJobNeverYielded(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		b.newJob(t, "j", t0, false)
		results, next, err := b.jobs.JobProgress(t.Context(), "j")
		require.NoError(t, err)
		require.Empty(t, results)
		require.Zero(t, next)
	})
}
