package quality_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// An example deleted after its run was created is counted failed with a
// message; the others are counted as usual.
func TestDatasetRunDeletedExample(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, vs := b.label(t, b.mine, "Spam", spamV1)
		cs := spamDataset()[:8] // TP 6, FP 2
		examples := b.examples(t, b.mine, l.ID, cs)
		run, err := b.quality.CreateRun(ctx, b.mine, l.ID, vs[0].ID, nil)
		require.NoError(t, err)
		require.NoError(t, b.quality.DeleteExample(ctx, b.mine, l.ID, examples[4].ID))
		b.startWorkers(t)
		run = b.waitForRun(t, run)
		require.Equal(t, 8, run.ExampleCount)
		require.Equal(t, 1, run.Failed)
		require.Equal(t, domain.Confusion{TruePositives: 5, FalsePositives: 2}, run.Confusion)
		_, results, _, err := b.quality.Results(ctx, b.mine, l.ID, run.ID, nil, "")
		require.NoError(t, err)
		require.Len(t, results, 8)
		require.Equal(t, examples[4].ID, results[4].ExampleID)
		require.Equal(t, rules.OutcomeFailed, results[4].Outcome)
		require.NotEmpty(t, results[4].Error)
	})
}

// A run's threshold: the call's, else the version's, else 0.5; zero counts
// as unset.
func TestDatasetRunThreshold(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, err := b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Spam"})
		require.NoError(t, err)
		plain, err := b.labels.CreateLabelVersion(ctx, b.mine.ID, l.ID, labels.NewLabelVersion{Text: spamV1})
		require.NoError(t, err)
		strict, err := b.labels.CreateLabelVersion(ctx, b.mine.ID, l.ID, labels.NewLabelVersion{Text: spamV1,
			EvalOptions: domain.LabelEvalOptions{Threshold: ptr(0.8)}})
		require.NoError(t, err)
		for _, tc := range []struct {
			name    string
			version *domain.LabelVersion
			call    *float64
			want    float64
		}{
			{"default", plain, nil, 0.5},
			{"the version's", strict, nil, 0.8},
			{"the call's over the version's", strict, ptr(0.3), 0.3},
			{"zero is unset", strict, ptr(0.0), 0.8},
		} {
			run, err := b.quality.CreateRun(ctx, b.mine, l.ID, tc.version.ID, tc.call)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, run.Threshold, tc.name)
		}
		_, err = b.quality.CreateRun(ctx, b.mine, l.ID, plain.ID, ptr(1.5))
		requireField(t, err, "threshold", "above 1")
	})
}

// A page token is bound to the listing it came from.
func TestPageTokensBound(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		a, _ := b.label(t, b.mine, "A")
		c, _ := b.label(t, b.mine, "B")
		b.examples(t, b.mine, a.ID, spamDataset()[:3])
		page, err := b.quality.ListExamples(ctx, b.mine, a.ID, ptr[int32](1), "")
		require.NoError(t, err)
		require.NotEmpty(t, page.NextPageToken)
		_, err = b.quality.ListExamples(ctx, b.mine, c.ID, nil, page.NextPageToken)
		requireField(t, err, "page_token", "a token of another label")
		_, err = b.quality.ListExamples(ctx, b.mine, a.ID, ptr[int32](-1), "")
		requireField(t, err, "page_size", "a negative page size")
	})
}
