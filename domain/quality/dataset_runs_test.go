package quality_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/quality"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// datasetCase is one example of spamDataset with its outcome under each
// version: v1 flags "buy now", v2 also "free money".
type datasetCase struct {
	text     string
	expected domain.EvaluationResult
	v1, v2   rules.Outcome
}

// spamDataset is 20 examples whose confusion under v1 is TP 6, FP 2, TN 8,
// FN 4 and under v2 TP 10, FP 3, TN 7, FN 0; five outcomes change.
func spamDataset() []datasetCase {
	var cs []datasetCase
	add := func(n int, format string, expected domain.EvaluationResult, v1, v2 rules.Outcome) {
		for i := range n {
			cs = append(cs, datasetCase{fmt.Sprintf(format, len(cs), i), expected, v1, v2})
		}
	}
	T, F := domain.EvaluationResultTrue, domain.EvaluationResultFalse
	add(6, "example %d: buy now, offer %d", T, rules.OutcomeTrue, rules.OutcomeTrue)              // TP, TP
	add(2, "example %d: I said buy now to my friend %d", F, rules.OutcomeTrue, rules.OutcomeTrue) // FP, FP
	add(4, "example %d: free money for you %d", T, rules.OutcomeFalse, rules.OutcomeTrue)         // FN, TP
	add(1, "example %d: free money is a myth %d", F, rules.OutcomeFalse, rules.OutcomeTrue)       // TN, FP
	add(7, "example %d: the weather is nice %d", F, rules.OutcomeFalse, rules.OutcomeFalse)       // TN, TN
	return cs
}

const (
	spamV1 = `=("buy now")`
	spamV2 = `ANY(=("buy now"), =("free money"))`
)

func (b *bundle) examples(t *testing.T, account *domain.Account, labelID string, cs []datasetCase) []*domain.DatasetExample {
	t.Helper()
	in := make([]quality.NewExample, len(cs))
	for i, c := range cs {
		in[i] = quality.NewExample{Content: text(c.text), Expected: c.expected}
	}
	es, err := b.quality.CreateExamples(t.Context(), account, labelID, in)
	require.NoError(t, err)
	return es
}

// waitForRun waits until the run is finished and returns it.
func (b *bundle) waitForRun(t *testing.T, run *domain.DatasetRun) *domain.DatasetRun {
	t.Helper()
	waitFor(t, "dataset run "+run.ID, func() bool {
		var err error
		run, err = b.quality.GetRun(t.Context(), b.mine, run.LabelID, run.ID)
		require.NoError(t, err)
		return run.State == domain.DatasetRunCompleted || run.State == domain.DatasetRunFailed
	})
	return run
}

// TestDatasetRuns runs two versions of a label over 20 examples with known
// outcomes, in chunks of three examples: exact counts, precision, recall
// and F1, per-example results, and the comparison listing exactly the
// examples whose outcome changed.
func TestDatasetRuns(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, vs := b.label(t, b.mine, "Spam", spamV1, spamV2)
		cs := spamDataset()
		examples := b.examples(t, b.mine, l.ID, cs)

		// Queued, not yet evaluated: pending, and not comparable.
		run1, err := b.quality.CreateRun(ctx, b.mine, l.ID, vs[0].ID, nil)
		require.NoError(t, err)
		require.Equal(t, domain.DatasetRunPending, run1.State)
		require.Equal(t, 20, run1.ExampleCount)
		require.Equal(t, 0.5, run1.Threshold)
		run2, err := b.quality.CreateRun(ctx, b.mine, l.ID, vs[1].ID, nil)
		require.NoError(t, err)
		_, _, err = b.quality.Compare(ctx, b.mine, l.ID, run2.ID, run1.ID, nil, "")
		require.Equal(t, domain.FailedPrecondition, domain.ErrorCode(err), "runs not finished")

		b.startWorkers(t)
		run1, run2 = b.waitForRun(t, run1), b.waitForRun(t, run2)
		for _, tc := range []struct {
			run                   *domain.DatasetRun
			want                  domain.Confusion
			precision, recall, f1 float64
		}{
			{run1, domain.Confusion{TruePositives: 6, FalsePositives: 2, TrueNegatives: 8, FalseNegatives: 4}, 0.75, 0.6, 2.0 / 3.0},
			{run2, domain.Confusion{TruePositives: 10, FalsePositives: 3, TrueNegatives: 7, FalseNegatives: 0}, 10.0 / 13.0, 1, 20.0 / 23.0},
		} {
			require.Equal(t, domain.DatasetRunCompleted, tc.run.State)
			require.Equal(t, tc.want, tc.run.Confusion)
			require.Zero(t, tc.run.Failed)
			require.NotNil(t, tc.run.Completed)
			for _, f := range []struct {
				name string
				fn   func() (float64, bool)
				want float64
			}{{"precision", tc.run.Precision, tc.precision}, {"recall", tc.run.Recall, tc.recall}, {"F1", tc.run.F1, tc.f1}} {
				got, ok := f.fn()
				require.True(t, ok, f.name)
				require.InDelta(t, f.want, got, 1e-12, f.name)
			}
		}

		// Per-example results, paged, in example order.
		var results []*domain.DatasetRunResult
		for token := ""; ; {
			_, page, next, err := b.quality.Results(ctx, b.mine, l.ID, run1.ID, ptr[int32](8), token)
			require.NoError(t, err)
			results = append(results, page...)
			if token = next; token == "" {
				break
			}
		}
		require.Len(t, results, 20)
		for i, r := range results {
			require.Equal(t, examples[i].ID, r.ExampleID)
			require.Equal(t, cs[i].expected, r.Expected)
			require.Equal(t, cs[i].v1, r.Outcome, "example %d: %s", i, cs[i].text)
			require.Equal(t, "Spam", r.Report.Sections[0].Name)
		}

		// The comparison lists exactly the examples whose outcome changed,
		// paged by one.
		var want, got []*domain.DatasetRunChange
		for i, c := range cs {
			if c.v1 != c.v2 {
				want = append(want, &domain.DatasetRunChange{Seq: i, ExampleID: examples[i].ID, Expected: c.expected, BaseOutcome: c.v1, Outcome: c.v2})
			}
		}
		require.Len(t, want, 5)
		for token := ""; ; {
			page, next, err := b.quality.Compare(ctx, b.mine, l.ID, run2.ID, run1.ID, ptr[int32](1), token)
			require.NoError(t, err)
			got = append(got, page...)
			if token = next; token == "" {
				break
			}
		}
		require.Equal(t, want, got)

		runs, _, err := b.quality.ListRuns(ctx, b.mine, l.ID, nil, "")
		require.NoError(t, err)
		require.Len(t, runs, 2)
		require.Equal(t, run2.ID, runs[0].ID, "newest first")

		// A threshold above every score but the exact matches'.
		run3, err := b.quality.CreateRun(ctx, b.mine, l.ID, vs[0].ID, ptr(0.9))
		require.NoError(t, err)
		run3 = b.waitForRun(t, run3)
		require.Equal(t, 0.9, run3.Threshold)
		require.Equal(t, 6, run3.TruePositives, "exact matches score 1")
	})
}

// Another account's label, version and runs are NOT_FOUND.
func TestDatasetRunsAccountScoping(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, vs := b.label(t, b.mine, "Spam", spamV1)
		b.examples(t, b.mine, l.ID, spamDataset()[:2])
		run, err := b.quality.CreateRun(ctx, b.mine, l.ID, vs[0].ID, nil)
		require.NoError(t, err)
		them := b.other
		for _, tc := range []struct {
			name string
			call func(context.Context) error
		}{
			{"create run", func(ctx context.Context) error {
				_, err := b.quality.CreateRun(ctx, them, l.ID, vs[0].ID, nil)
				return err
			}},
			{"get run", func(ctx context.Context) error { _, err := b.quality.GetRun(ctx, them, l.ID, run.ID); return err }},
			{"list runs", func(ctx context.Context) error { _, _, err := b.quality.ListRuns(ctx, them, l.ID, nil, ""); return err }},
			{"results", func(ctx context.Context) error {
				_, _, _, err := b.quality.Results(ctx, them, l.ID, run.ID, nil, "")
				return err
			}},
			{"compare", func(ctx context.Context) error {
				_, _, err := b.quality.Compare(ctx, them, l.ID, run.ID, run.ID, nil, "")
				return err
			}},
		} {
			require.Equal(t, domain.NotFound, domain.ErrorCode(tc.call(ctx)), tc.name)
		}

		// A version of another label of mine is not a version of this one.
		other, ovs := b.label(t, b.mine, "Other", `=("x")`)
		_, err = b.quality.CreateRun(ctx, b.mine, l.ID, ovs[0].ID, nil)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err))
		_, err = b.quality.GetRun(ctx, b.mine, other.ID, run.ID)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "a run of another label")

		// Without examples a run is completed at once.
		empty, err := b.quality.CreateRun(ctx, b.mine, other.ID, ovs[0].ID, nil)
		require.NoError(t, err)
		require.Equal(t, domain.DatasetRunCompleted, empty.State)
		require.Zero(t, empty.ExampleCount)
	})
}
