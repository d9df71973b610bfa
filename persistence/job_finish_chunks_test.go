package persistence_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestJobs_FinishWritesLargeOutcomes: the results of a job are written a
// few at a time (their reports together are several chunks), each with its
// hits whatever order the hits come in, all in the one transaction: a hit
// of no result of the job writes nothing at all.
func TestJobs_FinishWritesLargeOutcomes(t *testing.T) {
	t.Parallel()
	const n = 12
	big := strings.Repeat("x", 150<<10)
	outcome := func(now time.Time) ([]*domain.JobResult, []*domain.LabelHit) {
		var results []*domain.JobResult
		var hits []*domain.LabelHit
		for i := range n {
			id := fmt.Sprintf("r%02d", i)
			results = append(results, &domain.JobResult{ID: id, JobID: "j", Index: i, Created: now,
				Report: &rules.Report{Result: rules.OutcomeTrue, Sections: []rules.SectionReport{{Name: "A", Message: big, Result: rules.OutcomeTrue}}}})
		}
		// Hits of the last result first: grouping does not rely on order.
		for i := n - 1; i >= 0; i-- {
			for k := range 2 {
				hits = append(hits, &domain.LabelHit{JobID: "j", JobResultID: fmt.Sprintf("r%02d", i), Seq: 2*i + k,
					Label: fmt.Sprintf("L%d", k), Modality: domain.ModalityText, Score: 1,
					Spans: []rules.TextSpan{{Start: 0, End: 1, Text: "x"}}})
			}
		}
		return results, hits
	}
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		b.newJob(t, "j", t0, false)
		now := t0.Add(time.Second)
		_, err := b.jobs.ClaimJobs(ctx, "w", now, now.Add(time.Minute), 1, 0)
		require.NoError(t, err)

		results, hits := outcome(now)
		stray := &domain.LabelHit{JobID: "j", JobResultID: "elsewhere", Seq: 99, Label: "A", Modality: domain.ModalityText, Score: 1}
		requireCode(t, b.jobs.FinishJob(ctx, "j", "w", domain.JobCompleted, now, nil, results, append(hits, stray)), domain.NotFound)
		stored, err := b.jobs.ListJobResults(ctx, "j")
		require.NoError(t, err)
		require.Empty(t, stored, "a refused outcome leaves nothing behind")

		require.NoError(t, b.jobs.FinishJob(ctx, "j", "w", domain.JobCompleted, now, nil, results, hits))
		stored, err = b.jobs.ListJobResults(ctx, "j")
		require.NoError(t, err)
		require.Len(t, stored, n)
		for i, r := range stored {
			require.Equal(t, i, r.Index)
			require.Equal(t, big, r.Report.Sections[0].Message)
		}
		hs, err := b.jobs.ListLabelHits(ctx, "j", "", -1, 100)
		require.NoError(t, err)
		require.Len(t, hs, 2*n)
		for i, h := range hs {
			require.Equal(t, i, h.Seq)
			require.Equal(t, fmt.Sprintf("r%02d", i/2), h.JobResultID)
			require.Len(t, h.Spans, 1)
		}
	})
}

// TestJobs_SaveResultsAsItGoes: a running job stores its results as it
// goes (only while its owner holds it), finishes with the rest, and its
// metric counts are those of all of them, as the jobs themselves say; its
// results read back page by page.
func TestJobs_SaveResultsAsItGoes(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		ctx := t.Context()
		b.newJob(t, "j", t0, false)
		now := t0.Add(time.Second)
		_, err := b.jobs.ClaimJobs(ctx, "w", now, now.Add(time.Minute), 1, 0)
		require.NoError(t, err)
		results, hits := make([]*domain.JobResult, 5), make([][]*domain.LabelHit, 5)
		for i := range results {
			id := fmt.Sprintf("r%d", i)
			results[i] = &domain.JobResult{ID: id, JobID: "j", Index: i, Created: now, Report: &rules.Report{Result: rules.OutcomeTrue}}
			hits[i] = []*domain.LabelHit{{JobID: "j", JobResultID: id, Seq: i, Label: "A", Modality: domain.ModalityText, Score: 1}}
		}
		requireCode(t, b.jobs.SaveJobResults(ctx, "j", "other", results[:2], append(hits[0], hits[1]...)), domain.Aborted)
		require.NoError(t, b.jobs.SaveJobResults(ctx, "j", "w", results[:2], append(hits[0], hits[1]...)))
		require.NoError(t, b.jobs.SaveJobResults(ctx, "j", "w", results[2:3], hits[2]))
		require.NoError(t, b.jobs.FinishJob(ctx, "j", "w", domain.JobCompleted, now, nil, results[3:], append(hits[3], hits[4]...)))

		var got []int
		for after := -1; ; {
			page, err := b.jobs.ListJobResultsAfter(ctx, "j", after, 2)
			require.NoError(t, err)
			for _, r := range page {
				got, after = append(got, r.Index), r.Index
			}
			if len(page) < 2 {
				break
			}
		}
		require.Equal(t, []int{0, 1, 2, 3, 4}, got)

		metrics := persistence.NewQualityMetrics(db)
		q := domain.MetricsQuery{AccountID: b.account.ID, PolicyVersionID: "v1", Labels: []string{"A"}}
		want, err := metrics.ScanVersionMetrics(ctx, q)
		require.NoError(t, err)
		counted, err := metrics.VersionMetrics(ctx, q)
		require.NoError(t, err)
		require.Equal(t, want, counted)
		require.Equal(t, 5, counted[0].Evaluations)
		require.Equal(t, 5, counted[0].Positives)
	})
}
