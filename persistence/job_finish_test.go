package persistence_test

import (
	"fmt"
	"net/url"
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

// The finished-job write path (job_finish.go): jobs stored already
// finished, as the synchronous fast path records them.

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
