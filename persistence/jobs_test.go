package persistence_test

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
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
		b.newJob(t, "j", t0, false)
		_, err := b.jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Minute), 1, 0)
		require.NoError(t, err)
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
		b.newJob(t, "j", t0, false)
		_, err := b.jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Minute), 1, 0)
		require.NoError(t, err)
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

// completedJob returns a job of account that completed a second after t0,
// as the synchronous fast path records it.
func completedJob(id, account string) *domain.Job {
	done := t0.Add(time.Second)
	return &domain.Job{
		ID: id, AccountID: account, Type: domain.JobTypeStandard, Status: domain.JobCompleted,
		Threshold: 0.5, Created: t0, Updated: done, Started: &t0, Completed: &done, Attempts: 1,
	}
}

func TestJobs_CreateFinishedJob(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		done := t0.Add(time.Second)
		j := completedJob("sync", b.account.ID)
		j.Input = []domain.ContentItem{{Kind: domain.ContentText, Text: "x"}}
		j.Contents = []domain.ContentSummary{{ContentHash: "sha256::00"}}
		results := []*domain.JobResult{{ID: "r", JobID: "sync", ContentHash: "sha256::00", Report: &rules.Report{Result: rules.OutcomeTrue}, Created: done}}
		hits := []*domain.LabelHit{{JobID: "sync", JobResultID: "r", Label: "A", Modality: domain.ModalityText, Score: 1}}
		require.NoError(t, b.jobs.CreateFinishedJob(ctx, j, results, hits))
		got, err := b.jobs.GetJob(ctx, b.account.ID, "sync")
		require.NoError(t, err)
		require.Equal(t, j, got)
		rs, err := b.jobs.ListJobResults(ctx, "sync")
		require.NoError(t, err)
		require.Len(t, rs, 1)
		hs, err := b.jobs.ListLabelHits(ctx, "sync", "", -1, 10)
		require.NoError(t, err)
		require.Len(t, hs, 1)
		// Finished jobs are never claimed.
		claimed, err := b.jobs.ClaimJobs(ctx, "w", done, done.Add(time.Minute), 10, 0)
		require.NoError(t, err)
		require.Empty(t, claimed)
		requireCode(t, b.jobs.CreateFinishedJob(ctx, j, nil, nil), domain.AlreadyExists)
		pending := *j
		pending.ID, pending.Status = "p", domain.JobPending
		requireCode(t, b.jobs.CreateFinishedJob(ctx, &pending, nil, nil), domain.InvalidArgument)
	})
}

// TestJobs_CreateFinishedJobShapes covers the shapes of the one-statement
// write (PostgreSQL) and its transaction fallback: several results and hits,
// none, more arguments than one statement may carry, and atomicity when a
// part fails.
func TestJobs_CreateFinishedJobShapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		results, hits int
		account       string      // "" = the test account
		badHit        bool        // a hit naming a result that does not exist
		code          domain.Code // 0: succeeds
	}{
		{name: "several results and hits", results: 3, hits: 7},
		{name: "results without hits", results: 2},
		{name: "failed without results"},
		{name: "more arguments than one statement", results: 2, hits: 3000},
		{name: "unknown account", results: 1, hits: 1, account: "nobody", code: domain.NotFound},
		{name: "bad hit rolls back the job", results: 1, hits: 2, badHit: true, code: domain.NotFound},
	}
	shapes := func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		done := t0.Add(time.Second)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				id := strings.ReplaceAll(tc.name, " ", "-")
				account := b.account.ID
				if tc.account != "" {
					account = tc.account
				}
				j := completedJob(id, account)
				if tc.results == 0 {
					j.Status, j.Error = domain.JobFailed, &domain.ErrJobInternal
				}
				// Values that array syntax must quote or escape, NULLs among
				// non-NULLs, and sub-millisecond times and scores, so that a
				// lossy encoding of the per-column arrays would show.
				tricky := `quote " backslash \ comma , braces {} NULL ` + "tab\t é"
				var results []*domain.JobResult
				for i := range tc.results {
					r := &domain.JobResult{ID: fmt.Sprintf("%s-r%d", id, i), JobID: id, Index: i,
						ContentHash: "sha256::00", Metadata: map[string]string{"k": tricky},
						Report: &rules.Report{Result: rules.OutcomeTrue}, Created: done.Add(time.Duration(i) * 1001 * time.Microsecond)}
					if i == 1 {
						r.Report, r.Error = nil, &domain.JobError{Reason: domain.ReasonJobFailed, Message: tricky}
					}
					results = append(results, r)
				}
				var hits []*domain.LabelHit
				for i := range tc.hits {
					r := results[i%len(results)].ID
					if tc.badHit && i == tc.hits-1 {
						r = "no-such-result"
					}
					h := &domain.LabelHit{JobID: id, JobResultID: r, Seq: i, Label: tricky + fmt.Sprint(i),
						Modality: domain.ModalityVideo, Score: 0.123456789, StartMs: int64(i) * 1000}
					if i%3 == 0 {
						h.Spans = []rules.TextSpan{{Start: i, End: i + 1, Text: tricky}}
					}
					if i%2 == 1 {
						end, fs, fe, ts, te := int64(i)*1000+500, int64(1), int64(2), int64(3), int64(1)<<40
						h.EndMs, h.FrameStartMs, h.FrameEndMs, h.TranscriptStartMs, h.TranscriptEndMs = &end, &fs, &fe, &ts, &te
					}
					hits = append(hits, h)
				}
				err := b.jobs.CreateFinishedJob(ctx, j, results, hits)
				if tc.code != 0 {
					requireCode(t, err, tc.code)
					_, err := b.jobs.GetJob(ctx, account, id)
					requireCode(t, err, domain.NotFound)
					return
				}
				require.NoError(t, err)
				got, err := b.jobs.GetJob(ctx, b.account.ID, id)
				require.NoError(t, err)
				require.Equal(t, j.Status, got.Status)
				rs, err := b.jobs.ListJobResults(ctx, id)
				require.NoError(t, err)
				require.Len(t, rs, tc.results)
				if tc.results > 0 {
					require.Equal(t, results, rs)
				}
				hs, err := b.jobs.ListLabelHits(ctx, id, "", -1, 5000)
				require.NoError(t, err)
				require.Len(t, hs, tc.hits)
				if tc.hits > 0 {
					require.Equal(t, hits, hs)
				}
			})
		}
	}
	persistencetest.Run(t, shapes)
	// The text arguments are sent in binary by default; with lib/pq's
	// binary_parameters off, as array literals.
	t.Run("postgres text parameters", func(t *testing.T) {
		t.Parallel()
		shapes(t, persistencetest.OpenPostgres(t, url.Values{"binary_parameters": {"no"}}))
	})
}

// The large JSON columns of the job write path are compressed with lz4 on
// PostgreSQL (migration 00050): pglz cost a tenth of the database's CPU per
// synchronous job.
func TestJobs_LargeColumnsUseLZ4(t *testing.T) {
	t.Parallel()
	// PostgreSQL only: SQLite does not compress rows.
	db := persistencetest.OpenPostgres(t, nil)
	b := setupJobs(t, db)
	ctx := t.Context()
	done := t0.Add(time.Second)
	big := strings.Repeat("compressible text ", 1000)
	j := completedJob("big", b.account.ID)
	j.Input = []domain.ContentItem{{Kind: domain.ContentText, Text: big}}
	results := []*domain.JobResult{{ID: "big-r", JobID: "big", Metadata: map[string]string{"m": big}, Created: done,
		Report: &rules.Report{Result: rules.OutcomeFalse, LabelMatches: map[string]float64{big: 1}}}}
	require.NoError(t, b.jobs.CreateFinishedJob(ctx, j, results, nil))
	var input, report string
	require.NoError(t, db.GetContext(ctx, &input, `SELECT pg_column_compression(input) FROM jobs WHERE id = 'big'`))
	require.NoError(t, db.GetContext(ctx, &report, `SELECT pg_column_compression(report) FROM job_results WHERE id = 'big-r'`))
	require.Equal(t, "lz4", input)
	require.Equal(t, "lz4", report)
}

// Concurrent synchronous jobs share statements on PostgreSQL (a group
// commit): every job is stored once with its own results and hits, and a
// bad job among them (unknown account, duplicate id) fails alone with its
// own code while the others in its group are stored.
func TestJobs_CreateFinishedJobConcurrent(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		done := t0.Add(time.Second)
		finished := func(id, account string) (*domain.Job, []*domain.JobResult, []*domain.LabelHit) {
			j := completedJob(id, account)
			results := []*domain.JobResult{{ID: id + "-r", JobID: id, ContentHash: "sha256::" + id,
				Report: &rules.Report{Result: rules.OutcomeTrue}, Created: done}}
			hits := []*domain.LabelHit{
				{JobID: id, JobResultID: id + "-r", Seq: 0, Label: "A " + id, Modality: domain.ModalityText, Score: 1},
				{JobID: id, JobResultID: id + "-r", Seq: 1, Label: "B " + id, Modality: domain.ModalityText, Score: 0.5},
			}
			return j, results, hits
		}
		first, rs, hs := finished("dup", b.account.ID)
		require.NoError(t, b.jobs.CreateFinishedJob(ctx, first, rs, hs))

		const n = 60
		want := map[string]domain.Code{}
		for i := range n {
			want[fmt.Sprintf("job-%02d", i)] = 0
		}
		want["stranger-1"], want["stranger-2"] = domain.NotFound, domain.NotFound
		want["dup"] = domain.AlreadyExists
		var mu sync.Mutex
		got := map[string]error{}
		var wg sync.WaitGroup
		for id := range want {
			account := b.account.ID
			if strings.HasPrefix(id, "stranger") {
				account = "nobody"
			}
			wg.Go(func() {
				j, rs, hs := finished(id, account)
				err := b.jobs.CreateFinishedJob(ctx, j, rs, hs)
				mu.Lock()
				got[id] = err
				mu.Unlock()
			})
		}
		wg.Wait()
		for id, code := range want {
			if code != 0 {
				requireCode(t, got[id], code)
				continue
			}
			require.NoError(t, got[id], id)
			rs, err := b.jobs.ListJobResults(ctx, id)
			require.NoError(t, err)
			require.Len(t, rs, 1, id)
			require.Equal(t, "sha256::"+id, rs[0].ContentHash)
			hs, err := b.jobs.ListLabelHits(ctx, id, "", -1, 10)
			require.NoError(t, err)
			require.Len(t, hs, 2, id)
			require.Equal(t, "A "+id, hs[0].Label)
		}
		for _, id := range []string{"stranger-1", "stranger-2"} {
			_, err := b.jobs.GetJob(ctx, "nobody", id)
			requireCode(t, err, domain.NotFound)
		}
		// The duplicate left the first job as it was.
		hs, err := b.jobs.ListLabelHits(ctx, "dup", "", -1, 10)
		require.NoError(t, err)
		require.Len(t, hs, 2)
	})
}
