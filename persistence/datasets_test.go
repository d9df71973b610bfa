package persistence_test

import (
	"fmt"
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

func textExample(id, account, label, text string, expected domain.EvaluationResult) *domain.DatasetExample {
	return &domain.DatasetExample{ID: id, AccountID: account, LabelID: label,
		Content:     domain.ContentItem{Kind: domain.ContentText, Text: text, Metadata: map[string]string{"k": id}},
		ContentHash: domain.ContentHash([]byte(text)), Expected: expected, Note: "note " + id, Created: t0}
}

func TestDatasets_ExamplesLimitsScopeAndBudget(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		la := f.create(t, f.a, "Spam", "")
		lb := f.create(t, f.b, "Spam", "")
		store := persistence.NewDatasets(db)

		img := &domain.DatasetExample{ID: "ex-2", AccountID: f.a, LabelID: la.ID,
			Content:     domain.ContentItem{Kind: domain.ContentImage, Bytes: []byte(strings.Repeat("\x00\xff", 300))},
			ContentHash: "sha256::img", Expected: domain.EvaluationResultFalse, Created: t0}
		require.NoError(t, store.CreateExamples(ctx, f.a, la.ID, []*domain.DatasetExample{
			textExample("ex-1", f.a, la.ID, "hello", domain.EvaluationResultTrue), img,
			textExample("ex-3", f.a, la.ID, "bye", domain.EvaluationResultFalse),
		}, 4))
		// The limit counts what the label holds: 3 + 2 > 4, nothing stored.
		err := store.CreateExamples(ctx, f.a, la.ID, []*domain.DatasetExample{
			textExample("ex-4", f.a, la.ID, "x", domain.EvaluationResultTrue), textExample("ex-5", f.a, la.ID, "y", domain.EvaluationResultTrue),
		}, 4)
		requireCode(t, err, domain.InvalidArgument)
		// Another account's label, or a missing one: NOT_FOUND.
		requireCode(t, store.CreateExamples(ctx, f.a, lb.ID, []*domain.DatasetExample{textExample("ex-6", f.a, lb.ID, "x", domain.EvaluationResultTrue)}, 4), domain.NotFound)
		requireCode(t, store.CreateExamples(ctx, f.a, "nope", []*domain.DatasetExample{textExample("ex-7", f.a, "nope", "x", domain.EvaluationResultTrue)}, 4), domain.NotFound)

		all, more, err := store.ListExamples(ctx, f.a, la.ID, "", 10, 1<<20)
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, all, 3)
		require.Equal(t, "hello", all[0].Content.Text)
		require.Equal(t, map[string]string{"k": "ex-1"}, all[0].Content.Metadata)
		require.Equal(t, img.Content.Bytes, all[1].Content.Bytes, "image bytes round-trip")
		require.Equal(t, domain.ContentImage, all[1].Content.Kind)
		require.Equal(t, persistence.StoredTime(t0), all[0].Created)
		// The byte budget cuts a page short (at least one example).
		page, more, err := store.ListExamples(ctx, f.a, la.ID, "", 10, 100)
		require.NoError(t, err)
		require.True(t, more)
		require.Equal(t, []string{"ex-1"}, []string{page[0].ID})
		page, more, err = store.ListExamples(ctx, f.a, la.ID, "ex-1", 10, 100)
		require.NoError(t, err)
		require.True(t, more)
		require.Equal(t, "ex-2", page[0].ID, "an example over the budget alone is still read")
		require.Len(t, page, 1)
		page, more, err = store.ListExamples(ctx, f.a, la.ID, "ex-1", 1, 1<<20)
		require.NoError(t, err)
		require.True(t, more)
		require.Len(t, page, 1)
		none, _, err := store.ListExamples(ctx, f.b, la.ID, "", 10, 1<<20)
		require.NoError(t, err)
		require.Empty(t, none)

		requireCode(t, store.DeleteExample(ctx, f.b, la.ID, "ex-1"), domain.NotFound)
		requireCode(t, store.DeleteExample(ctx, f.a, lb.ID, "ex-1"), domain.NotFound)
		require.NoError(t, store.DeleteExample(ctx, f.a, la.ID, "ex-1"))
		requireCode(t, store.DeleteExample(ctx, f.a, la.ID, "ex-1"), domain.NotFound)
	})
}

// chunkJobs returns a chunkJob func recording the jobs it makes.
func chunkJobs(account string, run *domain.DatasetRun, made *[]*domain.Job) func(from, to int) *domain.Job {
	return func(from, to int) *domain.Job {
		j := &domain.Job{ID: fmt.Sprintf("%s-chunk-%d", run.ID, from), AccountID: account, Type: domain.JobTypeDatasetRun,
			Status: domain.JobPending, LabelID: run.LabelID, LabelVersionID: run.LabelVersionID, Threshold: run.Threshold,
			Options: map[string]string{"from": fmt.Sprint(from), "to": fmt.Sprint(to)}, Created: t0, Updated: t0}
		*made = append(*made, j)
		return j
	}
}

// runResult is the result of example ex-seq of the runs of
// TestDatasets_RunSnapshotChunksAndExactlyOnceCounts (even examples are
// expected TRUE).
func runResult(seq int, outcome rules.Outcome) *domain.DatasetRunResult {
	e := domain.EvaluationResultFalse
	if seq%2 == 0 {
		e = domain.EvaluationResultTrue
	}
	return &domain.DatasetRunResult{Seq: seq, ExampleID: fmt.Sprintf("ex-%d", seq), Expected: e, Outcome: outcome, Score: 1,
		Report: &rules.Report{Result: outcome}}
}

// finishChunksConcurrently finishes the chunks of run runID, each with its
// results, at once.
func finishChunksConcurrently(t *testing.T, store *persistence.Datasets, runID string, chunks map[string][]*domain.DatasetRunResult, now time.Time) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(chunks))
	for id, rs := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- store.FinishDatasetRunChunk(t.Context(), id, "w", runID, rs, false, now)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// requireRunListings checks the comparison and listing of the two runs
// of label labelID, and that their chunk jobs are not listed as jobs.
func requireRunListings(t *testing.T, db *persistence.DB, account, labelID, runID, run2ID string) {
	t.Helper()
	ctx := t.Context()
	store, jobs := persistence.NewDatasets(db), persistence.NewJobs(db)
	// Compare: run 2 against run 1, examples in both with other outcomes.
	changes, err := store.CompareDatasetRuns(ctx, run2ID, runID, -1, 10)
	require.NoError(t, err)
	require.Equal(t, []*domain.DatasetRunChange{{Seq: 0, ExampleID: "ex-0", Expected: domain.EvaluationResultTrue,
		BaseOutcome: rules.OutcomeTrue, Outcome: rules.OutcomeFailed}}, changes)

	runs, err := store.ListDatasetRuns(ctx, account, labelID, nil, 10)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	runs, err = store.ListDatasetRuns(ctx, account, labelID, &domain.DatasetRunCursor{Created: runs[0].Created, ID: runs[0].ID}, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)

	// The chunk jobs never show in a job listing.
	listed, err := jobs.ListJobs(ctx, account, domain.JobFilter{}, nil, 100)
	require.NoError(t, err)
	require.Empty(t, listed)
}

func TestDatasets_RunSnapshotChunksAndExactlyOnceCounts(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		la := f.create(t, f.a, "Spam", "")
		store := persistence.NewDatasets(db)
		jobs := persistence.NewJobs(db)
		var examples []*domain.DatasetExample
		for i := range 7 {
			e := domain.EvaluationResultFalse
			if i%2 == 0 {
				e = domain.EvaluationResultTrue
			}
			examples = append(examples, textExample(fmt.Sprintf("ex-%d", i), f.a, la.ID, fmt.Sprintf("text %d", i), e))
		}
		require.NoError(t, store.CreateExamples(ctx, f.a, la.ID, examples, 100))

		run := &domain.DatasetRun{ID: "run-1", AccountID: f.a, LabelID: la.ID, LabelVersionID: "v1", Threshold: 0.5, Created: t0, Updated: t0}
		var made []*domain.Job
		require.NoError(t, store.CreateDatasetRun(ctx, run, 3, 2, chunkJobs(f.a, run, &made)))
		require.Equal(t, 7, run.ExampleCount)
		require.Len(t, made, 3)
		require.Equal(t, []string{"0", "3", "6"}, []string{made[0].Options["from"], made[1].Options["from"], made[2].Options["from"]})
		require.Equal(t, "7", made[2].Options["to"])
		// The snapshot does not move when examples change afterwards.
		require.NoError(t, store.DeleteExample(ctx, f.a, la.ID, "ex-4"))
		require.NoError(t, store.CreateExamples(ctx, f.a, la.ID, []*domain.DatasetExample{textExample("ex-9", f.a, la.ID, "late", domain.EvaluationResultTrue)}, 100))
		items, err := store.DatasetRunItems(ctx, run.ID, 3, 6, 1<<20)
		require.NoError(t, err)
		require.Len(t, items, 3)
		require.Equal(t, []string{"ex-3", "ex-4", "ex-5"}, []string{items[0].ExampleID, items[1].ExampleID, items[2].ExampleID})
		require.Equal(t, "text 3", items[0].Example.Content.Text)
		require.Nil(t, items[1].Example, "deleted since")
		require.Equal(t, domain.EvaluationResultTrue, items[1].Expected, "the snapshot keeps the expectation")
		budget, err := store.DatasetRunItems(ctx, run.ID, 3, 6, 7)
		require.NoError(t, err)
		require.Len(t, budget, 2, "6 + 0 bytes fit in 7; the next 6 do not")

		// Two runs active: a third is refused.
		run2 := &domain.DatasetRun{ID: "run-2", AccountID: f.a, LabelID: la.ID, LabelVersionID: "v1", Threshold: 0.5, Created: t0, Updated: t0}
		var made2 []*domain.Job
		require.NoError(t, store.CreateDatasetRun(ctx, run2, 100, 2, chunkJobs(f.a, run2, &made2)))
		require.Equal(t, 7, run2.ExampleCount, "one deleted, one added")
		run3 := &domain.DatasetRun{ID: "run-3", AccountID: f.a, LabelID: la.ID, LabelVersionID: "v1", Threshold: 0.5, Created: t0, Updated: t0}
		requireCode(t, store.CreateDatasetRun(ctx, run3, 100, 2, chunkJobs(f.a, run3, new([]*domain.Job))), domain.FailedPrecondition)
		requireCode(t, store.CreateDatasetRun(ctx, &domain.DatasetRun{ID: "run-4", AccountID: f.b, LabelID: la.ID, LabelVersionID: "v1",
			Threshold: 0.5, Created: t0, Updated: t0}, 100, 2, chunkJobs(f.b, run3, new([]*domain.Job))), domain.NotFound)

		// The chunks are queued jobs. Claim them all; finish them
		// concurrently, one of them also by a worker that lost its lease.
		now := time.Now()
		claimed, err := jobs.ClaimJobs(ctx, "w", now, now.Add(time.Hour), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 4)
		result := runResult
		T, F, X := rules.OutcomeTrue, rules.OutcomeFalse, rules.OutcomeFailed
		chunks := map[string][]*domain.DatasetRunResult{
			made[0].ID: {result(0, T), result(1, T), result(2, F)}, // TP FP FN
			made[1].ID: {result(3, F), result(4, X), result(5, F)}, // TN failed TN
			made[2].ID: {result(6, T)},                             // TP
		}
		requireCode(t, store.FinishDatasetRunChunk(ctx, made[0].ID, "someone-else", run.ID, chunks[made[0].ID], false, now), domain.Aborted)
		finishChunksConcurrently(t, store, run.ID, chunks, now)
		// A second finish of a finished chunk records nothing.
		requireCode(t, store.FinishDatasetRunChunk(ctx, made[0].ID, "w", run.ID, chunks[made[0].ID], false, now), domain.Aborted)

		got, err := store.GetDatasetRun(ctx, f.a, la.ID, run.ID)
		require.NoError(t, err)
		require.Equal(t, domain.DatasetRunCompleted, got.State)
		require.Equal(t, domain.Confusion{TruePositives: 2, FalsePositives: 1, TrueNegatives: 2, FalseNegatives: 1}, got.Confusion)
		require.Equal(t, 1, got.Failed)
		require.NotNil(t, got.Completed)
		results, err := store.ListDatasetRunResults(ctx, run.ID, -1, 100)
		require.NoError(t, err)
		require.Len(t, results, 7)
		for i, r := range results {
			require.Equal(t, i, r.Seq)
		}
		require.Equal(t, rules.OutcomeFailed, results[4].Outcome)
		require.Equal(t, &rules.Report{Result: rules.OutcomeTrue}, results[0].Report)
		_, err = store.GetDatasetRun(ctx, f.b, la.ID, run.ID)
		requireCode(t, err, domain.NotFound)

		// A chunk that gave up fails its run.
		require.NoError(t, store.FinishDatasetRunChunk(ctx, made2[0].ID, "w", run2.ID, []*domain.DatasetRunResult{result(0, X)}, true, now))
		got2, err := store.GetDatasetRun(ctx, f.a, la.ID, run2.ID)
		require.NoError(t, err)
		require.Equal(t, domain.DatasetRunFailed, got2.State)
		require.Equal(t, 1, got2.Failed)

		requireRunListings(t, db, f.a, la.ID, run.ID, run2.ID)
	})
}
