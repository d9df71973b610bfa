package labels_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// The label services on the real stores (both backends), below the HTTP
// layer.

func TestLabelsLifecycle(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, err := b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Spam", Description: "unsolicited offers"})
		require.NoError(t, err)
		got, err := b.labels.GetLabel(ctx, b.mine.ID, l.ID)
		require.NoError(t, err)
		require.Equal(t, "Spam", got.Name)
		require.Equal(t, "unsolicited offers", got.Description)

		_, err = b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Spam"})
		require.Equal(t, domain.AlreadyExists, domain.ErrorCode(err), "a name is the account's once")
		_, err = b.labels.CreateLabel(ctx, b.other.ID, labels.NewLabel{Name: "Spam"})
		require.NoError(t, err, "another account may use the name")

		for _, tc := range []struct {
			name  string
			in    labels.NewLabel
			field string
		}{
			{"empty name", labels.NewLabel{Name: " "}, "name"},
			{"long name", labels.NewLabel{Name: strings.Repeat("n", domain.MaxLabelNameLength+1)}, "name"},
			{"long description", labels.NewLabel{Name: "x", Description: strings.Repeat("d", domain.MaxLabelDescriptionLength+1)}, "description"},
		} {
			_, err := b.labels.CreateLabel(ctx, b.mine.ID, tc.in)
			requireField(t, err, tc.field, tc.name)
		}

		l, err = b.labels.UpdateLabel(ctx, b.mine.ID, l.ID, labels.LabelPatch{Description: ptr("offers"), Disabled: ptr(true)})
		require.NoError(t, err)
		require.Equal(t, "Spam", l.Name, "a nil field keeps its value")
		require.Equal(t, "offers", l.Description)
		require.True(t, l.Disabled)

		archived, err := b.labels.ArchiveLabel(ctx, b.mine.ID, l.ID)
		require.NoError(t, err)
		require.NotNil(t, archived.ArchivedAt)
		again, err := b.labels.ArchiveLabel(ctx, b.mine.ID, l.ID)
		require.NoError(t, err)
		require.True(t, archived.ArchivedAt.Equal(*again.ArchivedAt), "archiving twice keeps the first time")
		page, err := b.labels.ListLabels(ctx, b.mine.ID, labels.ListLabelsRequest{})
		require.NoError(t, err)
		require.Empty(t, page.Labels, "archived labels are listed on request only")
		page, err = b.labels.ListLabels(ctx, b.mine.ID, labels.ListLabelsRequest{IncludeArchived: true})
		require.NoError(t, err)
		require.Len(t, page.Labels, 1)
		unarchived, err := b.labels.UnarchiveLabel(ctx, b.mine.ID, l.ID)
		require.NoError(t, err)
		require.Nil(t, unarchived.ArchivedAt)

		// A label with a version cannot be deleted; one without can.
		_, err = b.labels.CreateLabelVersion(ctx, b.mine.ID, l.ID, labels.NewLabelVersion{Text: `=("buy now")`})
		require.NoError(t, err)
		require.Equal(t, domain.FailedPrecondition, domain.ErrorCode(b.labels.DeleteLabel(ctx, b.mine.ID, l.ID)))
		bare, err := b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Bare"})
		require.NoError(t, err)
		require.NoError(t, b.labels.DeleteLabel(ctx, b.mine.ID, bare.ID))
		_, err = b.labels.GetLabel(ctx, b.mine.ID, bare.ID)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err))
	})
}

// Another account's label and its versions are NOT_FOUND to every call, as
// if they did not exist.
func TestLabelsAccountScoping(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		theirs, tv := b.label(t, b.other, "Theirs", `=("x")`)
		other := b.mine.ID
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"get", func() error { _, err := b.labels.GetLabel(ctx, other, theirs.ID); return err }},
			{"update", func() error {
				_, err := b.labels.UpdateLabel(ctx, other, theirs.ID, labels.LabelPatch{Name: ptr("mine now")})
				return err
			}},
			{"archive", func() error { _, err := b.labels.ArchiveLabel(ctx, other, theirs.ID); return err }},
			{"delete", func() error { return b.labels.DeleteLabel(ctx, other, theirs.ID) }},
			{"set tags", func() error { _, err := b.labels.SetLabelTags(ctx, other, theirs.ID, nil); return err }},
			{"create version", func() error {
				_, err := b.labels.CreateLabelVersion(ctx, other, theirs.ID, labels.NewLabelVersion{Text: `=("y")`})
				return err
			}},
			{"get version", func() error { _, err := b.labels.GetLabelVersion(ctx, other, theirs.ID, tv.ID); return err }},
			{"list versions", func() error { _, err := b.labels.ListLabelVersions(ctx, other, theirs.ID, nil, ""); return err }},
		} {
			require.Equal(t, domain.NotFound, domain.ErrorCode(tc.call()), tc.name)
		}
		page, err := b.labels.ListLabels(ctx, other, labels.ListLabelsRequest{IncludeArchived: true})
		require.NoError(t, err)
		require.Empty(t, page.Labels)
		got, err := b.labels.GetLabel(ctx, b.other.ID, theirs.ID)
		require.NoError(t, err)
		require.Equal(t, "Theirs", got.Name, "the calls above changed nothing")

		// Evaluating another account's version is a per-version error, and
		// no job.
		resp, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text("x"), LabelVersionIDs: []string{tv.ID}})
		require.NoError(t, err)
		require.Len(t, resp.Results, 1)
		require.Contains(t, resp.Results[0].Error, "not found")
		require.Empty(t, resp.Results[0].JobID)
		require.Nil(t, resp.Results[0].Evaluation)
	})
}

// A version that does not compile is refused with every error at its line
// and column; nothing is stored, so the next version is still 1.
func TestLabelVersionCompileErrors(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, err := b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Threat"})
		require.NoError(t, err)
		type at struct{ line, column int }
		for _, tc := range []struct {
			name string
			text string
			want []at
			says string // in the first error's message
		}{
			{"unknown construct, then unbalanced", "=(\"a\") [WIBBLE] =(\"b\")\n)))", []at{{1, 8}, {2, 1}}, "WIBBLE"},
			{"error on the third line", "ANY(\n  =(\"a\"),\n  [WIBBLE]\n)", []at{{3, 3}}, `found "["`},
		} {
			_, err := b.labels.CreateLabelVersion(ctx, b.mine.ID, l.ID, labels.NewLabelVersion{Text: tc.text})
			require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err), tc.name)
			var de *domain.Error
			require.True(t, errors.As(err, &de), tc.name)
			var ce *domain.CompilationErrors
			for _, d := range de.Details {
				if c, ok := d.(domain.CompilationErrors); ok {
					ce = &c
				}
			}
			require.NotNil(t, ce, "%s: a CompilationErrors detail: %+v", tc.name, de.Details)
			var got []at
			for _, e := range ce.Errors {
				got = append(got, at{e.Line, e.Column})
			}
			require.Equal(t, tc.want, got, tc.name)
			require.Contains(t, ce.Errors[0].Message, tc.says, tc.name)
		}
		v, err := b.labels.CreateLabelVersion(ctx, b.mine.ID, l.ID, labels.NewLabelVersion{Text: `=("kill")`})
		require.NoError(t, err)
		require.EqualValues(t, 1, v.SequentialVersion)
	})
}

// Versions are published in sequence and listed in it, page by page.
func TestLabelVersionsPublishedInSequence(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, err := b.labels.CreateLabel(ctx, b.mine.ID, labels.NewLabel{Name: "Spam"})
		require.NoError(t, err)
		var created []*domain.LabelVersion
		parent := ""
		for i := range 5 {
			v, err := b.labels.CreateLabelVersion(ctx, b.mine.ID, l.ID, labels.NewLabelVersion{
				Text: `=("offer ` + string(rune('a'+i)) + `")`, ParentLabelVersionID: parent, GlobalContext: "ads"})
			require.NoError(t, err)
			require.EqualValues(t, i+1, v.SequentialVersion)
			require.Positive(t, v.SignalCount)
			created, parent = append(created, v), v.ID
		}
		got, err := b.labels.GetLabelVersion(ctx, b.mine.ID, l.ID, created[2].ID)
		require.NoError(t, err)
		require.Equal(t, created[2].Text, got.Text)
		require.Equal(t, created[1].ID, got.ParentLabelVersionID)
		require.Equal(t, "ads", got.GlobalContext)

		var listed []string
		pages, token := 0, ""
		for {
			page, err := b.labels.ListLabelVersions(ctx, b.mine.ID, l.ID, ptr[int32](2), token)
			require.NoError(t, err)
			for _, v := range page.Versions {
				listed = append(listed, v.ID)
			}
			pages++
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		want := make([]string, len(created))
		for i, v := range created {
			want[i] = v.ID
		}
		require.Equal(t, want, listed)
		require.Equal(t, 3, pages)

		_, err = b.labels.ListLabelVersions(ctx, b.mine.ID, l.ID, ptr[int32](-1), "")
		requireField(t, err, "page_size", "negative page size")
	})
}

// Evaluating text against versions: each version gets a completed job with
// its result and hits; a label that may not be evaluated gets an error and
// no job.
func TestEvaluate(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		spam, sv := b.label(t, b.mine, "Spam", `=("buy now")`)
		_, tv := b.label(t, b.mine, "Threat", `=("kill")`)
		disabled, dv := b.label(t, b.mine, "Disabled", `=("buy now")`)
		_, err := b.labels.UpdateLabel(ctx, b.mine.ID, disabled.ID, labels.LabelPatch{Disabled: ptr(true)})
		require.NoError(t, err)
		archived, av := b.label(t, b.mine, "Archived", `=("buy now")`)
		_, err = b.labels.ArchiveLabel(ctx, b.mine.ID, archived.ID)
		require.NoError(t, err)

		for _, tc := range []struct {
			text    string
			version *domain.LabelVersion
			want    rules.Outcome
			err     string // the result's error instead of an evaluation
		}{
			{"buy now, while stocks last", sv, rules.OutcomeTrue, ""},
			{"the weather is nice", sv, rules.OutcomeFalse, ""},
			{"I will kill you", tv, rules.OutcomeTrue, ""},
			{"buy now", dv, "", "disabled"},
			{"buy now", av, "", "archived"},
		} {
			resp, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text(tc.text), LabelVersionIDs: []string{tc.version.ID}})
			require.NoError(t, err, tc.text)
			require.Len(t, resp.Results, 1)
			r := resp.Results[0]
			require.Equal(t, tc.version.LabelID, r.LabelID)
			if tc.err != "" {
				require.Contains(t, r.Error, tc.err)
				require.Empty(t, r.JobID, "no job for a label that may not be evaluated")
				continue
			}
			require.Empty(t, r.Error)
			require.Equal(t, tc.want, r.Evaluation.Outcome, tc.text)
			require.Equal(t, 0.5, r.Evaluation.Threshold)
			j, err := b.jobs.GetJob(ctx, b.mine.ID, r.JobID)
			require.NoError(t, err)
			require.Equal(t, domain.JobCompleted, j.Status, "the job is recorded finished")
			require.Equal(t, tc.version.ID, j.LabelVersionID)

			hits, err := b.eval.ListJobLabelHits(ctx, b.mine.ID, labels.ListJobLabelHitsRequest{JobID: r.JobID})
			require.NoError(t, err)
			require.Equal(t, domain.JobCompleted, hits.Status)
			if tc.want == rules.OutcomeTrue {
				require.Len(t, hits.Hits, 1, tc.text)
			} else {
				require.Empty(t, hits.Hits, tc.text)
			}
			_, err = b.eval.ListJobLabelHits(ctx, b.other.ID, labels.ListJobLabelHitsRequest{JobID: r.JobID})
			require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's job")
		}

		// Several versions in one call, in request order; an unknown id is
		// an error of its own and the others are still evaluated.
		resp, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text("buy now or I kill you"),
			LabelVersionIDs: []string{tv.ID, "no-such-version", sv.ID}})
		require.NoError(t, err)
		require.Len(t, resp.Results, 3)
		require.Equal(t, rules.OutcomeTrue, resp.Results[0].Evaluation.Outcome)
		require.Contains(t, resp.Results[1].Error, "not found")
		require.Equal(t, spam.ID, resp.Results[2].LabelID)
		require.Equal(t, rules.OutcomeTrue, resp.Results[2].Evaluation.Outcome)

		// The same content, version and settings again: from the cache.
		before := b.eval.CacheStats()
		_, err = b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text("the weather is nice"), LabelVersionIDs: []string{sv.ID}})
		require.NoError(t, err)
		require.Equal(t, before.Hits+1, b.eval.CacheStats().Hits)

		for _, tc := range []struct {
			name  string
			req   labels.EvaluateLabelsRequest
			field string
		}{
			{"no versions", labels.EvaluateLabelsRequest{Content: text("x")}, "labelVersionIds"},
			{"eleven versions", labels.EvaluateLabelsRequest{Content: text("x"), LabelVersionIDs: make([]string, 11)}, "labelVersionIds"},
			{"threshold above 1", labels.EvaluateLabelsRequest{Content: text("x"), LabelVersionIDs: []string{sv.ID}, Threshold: ptr(1.5)}, "threshold"},
		} {
			_, err := b.eval.Evaluate(ctx, b.mine, tc.req)
			requireField(t, err, tc.field, tc.name)
		}
	})
}

// Feedback on a label evaluation's job: the actual outcome is the job's,
// the label and ids default to the job's, and it is listed with the job.
func TestFeedback(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		spam, sv := b.label(t, b.mine, "Spam", `=("buy now")`)
		resp, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text("buy now"), LabelVersionIDs: []string{sv.ID}})
		require.NoError(t, err)
		jobID := resp.Results[0].JobID

		a, err := b.eval.CreateFeedback(ctx, b.mine.ID, jobID, labels.NewFeedback{Expected: domain.EvaluationResultFalse, Comment: "a quote"})
		require.NoError(t, err)
		require.Equal(t, "Spam", a.Label)
		require.Equal(t, domain.EvaluationResultTrue, a.Actual)
		require.Equal(t, spam.ID, a.LabelID)
		require.Equal(t, sv.ID, a.LabelVersionID)

		page, err := b.eval.ListFeedback(ctx, b.mine.ID, jobID, nil, "")
		require.NoError(t, err)
		require.Len(t, page.Annotations, 1)
		require.Equal(t, "a quote", page.Annotations[0].Comment)

		_, err = b.eval.CreateFeedback(ctx, b.other.ID, jobID, labels.NewFeedback{Expected: domain.EvaluationResultFalse})
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's job")
		_, err = b.eval.ListFeedback(ctx, b.other.ID, jobID, nil, "")
		require.Equal(t, domain.NotFound, domain.ErrorCode(err))
		theirs, _ := b.label(t, b.other, "Theirs", `=("x")`)
		_, err = b.eval.CreateFeedback(ctx, b.mine.ID, jobID, labels.NewFeedback{Expected: domain.EvaluationResultFalse, LabelID: theirs.ID})
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's labelId")
	})
}

// requireField asserts err is INVALID_ARGUMENT naming field.
func requireField(t *testing.T, err error, field, msg string) {
	t.Helper()
	require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err), "%s: %v", msg, err)
	var de *domain.Error
	require.True(t, errors.As(err, &de), msg)
	for _, d := range de.Details {
		if br, ok := d.(domain.BadRequest); ok {
			for _, v := range br.FieldViolations {
				if v.Field == field {
					return
				}
			}
		}
	}
	t.Fatalf("%s: %v does not name %s", msg, err, field)
}
