package persistence_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// jobsBundle is what every job test starts from.
type jobsBundle struct {
	jobs    *persistence.Jobs
	account *domain.Account
}

func setupJobs(t *testing.T, db *persistence.DB) *jobsBundle {
	t.Helper()
	b := &jobsBundle{jobs: persistence.NewJobs(db), account: newAccount("owner", t0)}
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(t.Context(), b.account))
	return b
}

// newJob returns a pending one-entry text job created at created.
func (b *jobsBundle) newJob(t *testing.T, id string, created time.Time, expedited bool) *domain.Job {
	t.Helper()
	j := &domain.Job{
		ID: id, AccountID: b.account.ID, Type: domain.JobTypeStandard, Status: domain.JobPending,
		PolicyID: "p1", PolicyKey: "key", PolicyVersionID: "v1", Threshold: 0.5, Expedited: expedited,
		Options:  map[string]string{"ocr": "true"},
		Input:    []domain.ContentItem{{Kind: domain.ContentText, Text: "hello " + id, Metadata: map[string]string{"k": "v"}}},
		Contents: []domain.ContentSummary{{ContentHash: "sha256::00", Metadata: map[string]string{"k": "v"}}},
		Webhook:  &domain.Webhook{URL: "https://example.com/hook", ExtraHeaders: map[string]string{"Team": "a"}},
		Created:  created, Updated: created,
	}
	require.NoError(t, b.jobs.CreateJob(t.Context(), j))
	return j
}

// claimedJob stores a pending job (newJob) and claims it for owner at at,
// with a lease of a minute.
func (b *jobsBundle) claimedJob(t *testing.T, id, owner string, at time.Time) {
	t.Helper()
	b.newJob(t, id, t0, false)
	got, err := b.jobs.ClaimJobs(t.Context(), owner, at, at.Add(time.Minute), 1, 0)
	require.NoError(t, err)
	require.Len(t, got, 1)
}

func TestJobs_CreateGet(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		j := b.newJob(t, "j1", t0, true)
		got, err := b.jobs.GetJob(t.Context(), b.account.ID, "j1")
		require.NoError(t, err)
		require.Equal(t, j, got)

		_, err = b.jobs.GetJob(t.Context(), "someone-else", "j1")
		requireCode(t, err, domain.NotFound)
		requireCode(t, b.jobs.CreateJob(t.Context(), j), domain.AlreadyExists)
		other := *j
		other.ID, other.AccountID = "j2", "nobody"
		requireCode(t, b.jobs.CreateJob(t.Context(), &other), domain.NotFound)
	})
}

// The store hides internal jobs from GetJob as it does from ListJobs: no
// caller can show a dataset run's or a shadow's job as a client's.
func TestJobs_GetHidesInternalJobs(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		for _, typ := range domain.InternalJobTypes {
			require.NoError(t, b.jobs.CreateJob(t.Context(), &domain.Job{ID: string(typ), AccountID: b.account.ID, Type: typ,
				Status: domain.JobPending, PolicyID: "p1", Created: t0, Updated: t0}))
			_, err := b.jobs.GetJob(t.Context(), b.account.ID, string(typ))
			requireCode(t, err, domain.NotFound)
		}
		listed, err := b.jobs.ListJobs(t.Context(), b.account.ID, domain.JobFilter{}, nil, 10)
		require.NoError(t, err)
		require.Empty(t, listed)
	})
}

func TestJobs_ClaimOrderAndLeases(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		b.newJob(t, "old", t0, false)
		b.newJob(t, "new", t0.Add(time.Second), false)
		b.newJob(t, "fast", t0.Add(2*time.Second), true)

		now := t0.Add(time.Minute)
		lease := now.Add(30 * time.Second)
		got, err := b.jobs.ClaimJobs(ctx, "w1", now, lease, 2, 0)
		require.NoError(t, err)
		require.Len(t, got, 2)
		ids := []string{got[0].ID, got[1].ID}
		sort.Strings(ids)
		require.Equal(t, []string{"fast", "old"}, ids, "expedited first, then oldest")
		for _, j := range got {
			require.Equal(t, domain.JobRunning, j.Status)
			require.Equal(t, "w1", j.LeaseOwner)
			require.Equal(t, 1, j.Attempts)
			require.Equal(t, persistence.StoredTime(now), *j.Started)
			require.Len(t, j.Input, 1, "claims return the input")
		}

		// While the leases hold, only the remaining job is claimable.
		got, err = b.jobs.ClaimJobs(ctx, "w2", now, lease, 10, 0)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "new", got[0].ID)
		got, err = b.jobs.ClaimJobs(ctx, "w2", now, lease, 10, 0)
		require.NoError(t, err)
		require.Empty(t, got)

		// w1 renews "old"; "fast" expires and is re-claimed by w3.
		require.NoError(t, b.jobs.RenewLease(ctx, "old", "w1", now.Add(time.Hour), now))
		requireCode(t, b.jobs.RenewLease(ctx, "old", "w2", now.Add(time.Hour), now), domain.Aborted)
		later := now.Add(time.Minute)
		got, err = b.jobs.ClaimJobs(ctx, "w3", later, later.Add(30*time.Second), 10, 0)
		require.NoError(t, err)
		ids = nil
		for _, j := range got {
			ids = append(ids, j.ID)
			require.Equal(t, 2, j.Attempts)
			require.Equal(t, persistence.StoredTime(now), *j.Started, "the first start is kept")
		}
		sort.Strings(ids)
		require.Equal(t, []string{"fast", "new"}, ids)

		// The old owner's late outcome is a no-op.
		requireCode(t, b.jobs.FinishJob(ctx, "fast", "w1", domain.JobCompleted, later, nil, nil, nil), domain.Aborted)
		require.NoError(t, b.jobs.FinishJob(ctx, "fast", "w3", domain.JobCompleted, later, nil, nil, nil))
		requireCode(t, b.jobs.FinishJob(ctx, "fast", "w3", domain.JobFailed, later, &domain.ErrJobInternal, nil, nil), domain.Aborted)
		j, err := b.jobs.GetJob(ctx, b.account.ID, "fast")
		require.NoError(t, err)
		require.Equal(t, domain.JobCompleted, j.Status)
		require.Empty(t, j.LeaseOwner)
		require.Nil(t, j.Error)

		// Release puts a job back in the queue.
		require.NoError(t, b.jobs.ReleaseJob(ctx, "new", "w3", later))
		requireCode(t, b.jobs.ReleaseJob(ctx, "new", "w3", later), domain.Aborted)
		got, err = b.jobs.ClaimJobs(ctx, "w4", later, later.Add(time.Minute), 10, 0)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "new", got[0].ID)

		requireCode(t, b.jobs.FinishJob(ctx, "new", "w4", domain.JobRunning, later, nil, nil, nil), domain.InvalidArgument)
	})
}

func TestJobs_FinishStoresResultsAndHits(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		b.claimedJob(t, "j", "w", t0)
		spans := []rules.TextSpan{{Start: 2, End: 6, Text: "kill"}, {Start: 7, End: 9, Text: "😀\"", Transcript: &rules.TimeRange{StartMs: 1, EndMs: 2}}}
		rep := &rules.Report{Result: rules.OutcomeTrue, LabelMatches: map[string]float64{"A": 1}, Threshold: 0.5,
			Sections: []rules.SectionReport{{Name: "A", Result: rules.OutcomeTrue, Score: 1,
				Assertions: []rules.AssertionReport{{Result: rules.OutcomeTrue, Score: 1, Spans: &spans}, {Result: rules.OutcomeFalse}}}}}
		results := []*domain.JobResult{
			{ID: "r0", JobID: "j", Index: 0, ContentHash: "sha256::aa", Metadata: map[string]string{"x": "1"}, Report: rep, Created: t0},
			{ID: "r1", JobID: "j", Index: 1, ContentHash: "sha256::bb", Report: rep, Created: t0},
		}
		end := int64(500)
		hits := []*domain.LabelHit{
			{JobID: "j", JobResultID: "r0", Seq: 0, Label: "A", Modality: domain.ModalityText, Score: 1, Spans: spans},
			{JobID: "j", JobResultID: "r1", Seq: 1, Label: "A", Modality: domain.ModalityText, Score: 0.75, EndMs: &end},
		}
		require.NoError(t, b.jobs.FinishJob(ctx, "j", "w", domain.JobCompleted, t0.Add(time.Second), nil, results, hits))

		got, err := b.jobs.ListJobResults(ctx, "j")
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, "r0", got[0].ID)
		require.Equal(t, rep, got[0].Report)
		require.Equal(t, map[string]string{"x": "1"}, got[0].Metadata)
		require.Equal(t, persistence.StoredTime(t0), got[0].Created)

		hs, err := b.jobs.ListLabelHits(ctx, "j", "", -1, 10)
		require.NoError(t, err)
		require.Equal(t, hits, hs)
		hs, err = b.jobs.ListLabelHits(ctx, "j", "r1", -1, 10)
		require.NoError(t, err)
		require.Len(t, hs, 1)
		require.Equal(t, int64(500), *hs[0].EndMs)

		j, err := b.jobs.GetJob(ctx, b.account.ID, "j")
		require.NoError(t, err)
		require.Equal(t, persistence.StoredTime(t0.Add(time.Second)), *j.Completed)
	})
}

// ListResultsOfJobs reads the results of a listing's page at once: each
// job's in entry order, none for a job without results or an unknown id.
func TestJobs_ListResultsOfJobs(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		for _, id := range []string{"a", "b", "c"} {
			b.newJob(t, id, t0, false)
		}
		_, err := b.jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Minute), 3, 0)
		require.NoError(t, err)
		rep := &rules.Report{Result: rules.OutcomeFalse, LabelMatches: map[string]float64{}, Threshold: 0.5}
		result := func(id, job string, index int) *domain.JobResult {
			return &domain.JobResult{ID: id, JobID: job, Index: index, ContentHash: "sha256::" + id, Report: rep, Created: t0}
		}
		// Recorded out of entry order: the read orders them.
		require.NoError(t, b.jobs.FinishJob(ctx, "a", "w", domain.JobCompleted, t0, nil,
			[]*domain.JobResult{result("a1", "a", 1), result("a0", "a", 0)}, nil))
		require.NoError(t, b.jobs.FinishJob(ctx, "b", "w", domain.JobCompleted, t0, nil, []*domain.JobResult{result("b0", "b", 0)}, nil))

		for _, tc := range []struct {
			name string
			ids  []string
			want map[string][]string
		}{
			{"all", []string{"c", "b", "a", "unknown"}, map[string][]string{"a": {"a0", "a1"}, "b": {"b0"}}},
			{"one", []string{"b"}, map[string][]string{"b": {"b0"}}},
			{"none", nil, map[string][]string{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := b.jobs.ListResultsOfJobs(ctx, tc.ids)
				require.NoError(t, err)
				ids := map[string][]string{}
				for job, rs := range got {
					for _, r := range rs {
						require.Equal(t, job, r.JobID)
						require.Equal(t, rep, r.Report)
						ids[job] = append(ids[job], r.ID)
					}
				}
				require.Equal(t, tc.want, ids)
			})
		}
	})
}

func TestJobs_FailedJobKeepsError(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		b.claimedJob(t, "j", "w", t0)
		require.NoError(t, b.jobs.FinishJob(ctx, "j", "w", domain.JobFailed, t0, &domain.ErrJobQuota, nil, nil))
		j, err := b.jobs.GetJob(ctx, b.account.ID, "j")
		require.NoError(t, err)
		require.Equal(t, domain.JobFailed, j.Status)
		require.Equal(t, &domain.ErrJobQuota, j.Error)
	})
}

func TestJobs_ChargeQuota(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		for i := range 4 {
			b.newJob(t, fmt.Sprintf("j%d", i), t0.Add(time.Duration(i)*time.Second), false)
		}
		_, err := b.jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 4, 0)
		require.NoError(t, err)
		const day = "2026-03-04"
		ok, err := b.jobs.ChargeQuota(ctx, "j0", "w", b.account.ID, day, 2, 3)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = b.jobs.ChargeQuota(ctx, "j0", "w", b.account.ID, day, 2, 3)
		require.NoError(t, err)
		require.True(t, ok, "a job is charged once; asking again is not a second charge")
		ok, err = b.jobs.ChargeQuota(ctx, "j1", "w", b.account.ID, day, 2, 3)
		require.NoError(t, err)
		require.False(t, ok, "2 + 2 > 3")
		ok, err = b.jobs.ChargeQuota(ctx, "j2", "w", b.account.ID, day, 1, 3)
		require.NoError(t, err)
		require.True(t, ok, "2 + 1 <= 3")
		ok, err = b.jobs.ChargeQuota(ctx, "j3", "w", b.account.ID, "2026-03-05", 3, 3)
		require.NoError(t, err)
		require.True(t, ok, "a new day starts at 0")
		ok, err = b.jobs.ChargeQuota(ctx, "j1", "w", b.account.ID, "2026-03-06", 4, 3)
		require.NoError(t, err)
		require.False(t, ok, "more than the limit in one job")
		_, err = b.jobs.ChargeQuota(ctx, "j1", "other", b.account.ID, day, 1, 3)
		requireCode(t, err, domain.Aborted)
	})
}

// TestJobs_ConcurrentClaimsAreExclusive has 8 claimers drain 500 jobs: every
// job is claimed exactly once and completed exactly once.
func TestJobs_ConcurrentClaimsAreExclusive(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		const n, workers = 500, 8
		for i := range n {
			j := &domain.Job{
				ID: fmt.Sprintf("job-%04d", i), AccountID: b.account.ID, Type: domain.JobTypeStandard,
				Status: domain.JobPending, Threshold: 0.5, Expedited: i%7 == 0,
				Created: t0.Add(time.Duration(i) * time.Millisecond), Updated: t0,
			}
			require.NoError(t, b.jobs.CreateJob(ctx, j))
		}
		now := t0.Add(time.Hour)
		var mu sync.Mutex
		claims := map[string]int{}
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("w%d", w)
				for {
					js, err := b.jobs.ClaimJobs(ctx, owner, now, now.Add(time.Hour), 5, 0)
					if err != nil {
						if domain.ErrorCode(err) == domain.Unavailable || domain.ErrorCode(err) == domain.Aborted {
							continue // busy database: retry, as the worker loop does
						}
						errs <- err
						return
					}
					if len(js) == 0 {
						return
					}
					for _, j := range js {
						mu.Lock()
						claims[j.ID]++
						mu.Unlock()
						if err := b.jobs.FinishJob(ctx, j.ID, owner, domain.JobCompleted, now, nil, nil, nil); err != nil {
							errs <- fmt.Errorf("finish %s: %w", j.ID, err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, claims, n)
		for id, c := range claims {
			require.Equal(t, 1, c, "job %s claimed %d times", id, c)
		}
		completed, err := b.jobs.ListJobs(ctx, b.account.ID, domain.JobFilter{Status: domain.JobCompleted}, nil, n+1)
		require.NoError(t, err)
		require.Len(t, completed, n)
	})
}

func TestJobs_ListFiltersAndKeyset(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		for i := range 5 {
			b.newJob(t, fmt.Sprintf("j%d", i), t0.Add(time.Duration(i)*time.Minute), false)
		}
		all, err := b.jobs.ListJobs(ctx, b.account.ID, domain.JobFilter{}, nil, 10)
		require.NoError(t, err)
		require.Len(t, all, 5)
		require.Equal(t, "j4", all[0].ID, "newest first")
		require.Empty(t, all[0].Input, "listings do not carry the input")

		page, err := b.jobs.ListJobs(ctx, b.account.ID, domain.JobFilter{}, &domain.JobCursor{Created: all[1].Created, ID: all[1].ID}, 10)
		require.NoError(t, err)
		require.Len(t, page, 3)
		require.Equal(t, "j2", page[0].ID)

		start, end := t0.Add(time.Minute), t0.Add(3*time.Minute)
		ex, err := b.jobs.ListJobs(ctx, b.account.ID, domain.JobFilter{Created: domain.TimeRange{Start: &start, End: &end}}, nil, 10)
		require.NoError(t, err)
		require.Len(t, ex, 1)
		require.Equal(t, "j2", ex[0].ID)
		in, err := b.jobs.ListJobs(ctx, b.account.ID, domain.JobFilter{Created: domain.TimeRange{Start: &start, End: &end, Inclusive: true}}, nil, 10)
		require.NoError(t, err)
		require.Len(t, in, 3)
		none, err := b.jobs.ListJobs(ctx, b.account.ID, domain.JobFilter{Completed: domain.TimeRange{Start: &start}}, nil, 10)
		require.NoError(t, err)
		require.Empty(t, none, "jobs that have not completed have no completed time")
		other, err := b.jobs.ListJobs(ctx, "someone-else", domain.JobFilter{}, nil, 10)
		require.NoError(t, err)
		require.Empty(t, other)
	})
}
