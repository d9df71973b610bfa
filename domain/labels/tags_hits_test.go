package labels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// Tags are the account's: labels are filtered by them, and another
// account's tag is NOT_FOUND.
func TestLabelTags(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		urgent, err := b.labels.CreateLabelTag(ctx, b.mine.ID, labels.NewLabelTag{Name: "urgent", Color: "red"})
		require.NoError(t, err)
		_, err = b.labels.CreateLabelTag(ctx, b.mine.ID, labels.NewLabelTag{Name: "urgent"})
		require.Equal(t, domain.AlreadyExists, domain.ErrorCode(err))
		theirs, err := b.labels.CreateLabelTag(ctx, b.other.ID, labels.NewLabelTag{Name: "urgent"})
		require.NoError(t, err)

		tagged, err := b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Threat", TagIDs: []string{urgent.ID, urgent.ID}})
		require.NoError(t, err)
		plain, err := b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Spam"})
		require.NoError(t, err)
		page, err := b.labels.ListLabels(ctx, b.mine.ID, labels.ListLabelsRequest{TagIDs: []string{urgent.ID}})
		require.NoError(t, err)
		require.Len(t, page.Labels, 1)
		require.Equal(t, tagged.ID, page.Labels[0].ID)
		page, err = b.labels.ListLabels(ctx, b.mine.ID, labels.ListLabelsRequest{})
		require.NoError(t, err)
		require.Len(t, page.Labels, 2)
		require.Equal(t, plain.ID, page.Labels[0].ID, "newest first")

		_, err = b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Scam", TagIDs: []string{theirs.ID}})
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's tag")
		_, err = b.labels.SetLabelTags(ctx, b.mine.ID, plain.ID, []string{theirs.ID})
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's tag")
		l, err := b.labels.SetLabelTags(ctx, b.mine.ID, plain.ID, []string{urgent.ID})
		require.NoError(t, err)
		require.Len(t, l.Tags, 1)
		require.Equal(t, urgent.ID, l.Tags[0].ID)

		tags, err := b.labels.ListLabelTags(ctx, b.mine.ID)
		require.NoError(t, err)
		require.Len(t, tags, 1)
		require.Equal(t, "red", tags[0].Color)
	})
}

// A renamed label's versions are evaluated under its current name.
func TestEvaluateRenamedLabel(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, v := b.label(t, b.mine, "Spam", `=("buy now")`)
		for _, name := range []string{"Spam", "Unsolicited"} {
			_, err := b.labels.UpdateLabel(ctx, b.mine.ID, l.ID, labels.LabelPatch{Name: ptr(name)})
			require.NoError(t, err)
			resp, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text("buy now"), LabelVersionIDs: []string{v.ID}})
			require.NoError(t, err)
			ev := resp.Results[0].Evaluation
			require.Equal(t, rules.OutcomeTrue, ev.Outcome, name)
			require.Equal(t, name, ev.Result.Report.Sections[0].Name)
			hits, err := b.eval.ListJobLabelHits(ctx, b.mine.ID, labels.ListJobLabelHitsRequest{JobID: resp.Results[0].JobID})
			require.NoError(t, err)
			require.Len(t, hits.Hits, 1)
			require.Equal(t, name, hits.Hits[0].Label)
		}
	})
}

// Content label evaluation cannot take fails the version's job, which is
// recorded failed; a job result filter of another job is NOT_FOUND.
func TestEvaluateFailedJobAndHitFilters(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		_, v := b.label(t, b.mine, "Spam", `=("buy now")`)
		url := "https://example.com/a.png"
		resp, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: domain.ContentInput{ImageURL: &url}, LabelVersionIDs: []string{v.ID}})
		require.NoError(t, err)
		r := resp.Results[0]
		require.NotEmpty(t, r.Error, "no image inspector")
		require.Nil(t, r.Evaluation)
		page, err := b.eval.ListJobLabelHits(ctx, b.mine.ID, labels.ListJobLabelHitsRequest{JobID: r.JobID})
		require.NoError(t, err)
		require.Equal(t, domain.JobFailed, page.Status)
		require.NotNil(t, page.Error)
		require.Nil(t, page.Hits, "a failed job's hits are withheld")

		ok, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text("buy now"), LabelVersionIDs: []string{v.ID}})
		require.NoError(t, err)
		other, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text("buy now!"), LabelVersionIDs: []string{v.ID}})
		require.NoError(t, err)
		job, otherResult := ok.Results[0].JobID, other.Results[0].Evaluation.Result.ID
		for _, tc := range []struct {
			name   string
			result string
			hits   int
			code   domain.Code
		}{
			{"every result", "", 1, domain.OK},
			{"its result", ok.Results[0].Evaluation.Result.ID, 1, domain.OK},
			{"a result of another job", otherResult, 0, domain.NotFound},
			{"no such result", "nope", 0, domain.NotFound},
		} {
			page, err := b.eval.ListJobLabelHits(ctx, b.mine.ID, labels.ListJobLabelHitsRequest{JobID: job, JobResultID: tc.result})
			require.Equal(t, tc.code, domain.ErrorCode(err), tc.name)
			if err == nil {
				require.Len(t, page.Hits, tc.hits, tc.name)
			}
		}
	})
}
