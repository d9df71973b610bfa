package quality_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// judged is one evaluation and the reviewer's judgement of it ("" for
// none).
type judged struct {
	text     string
	expected domain.EvaluationResult
}

var spamJudged = []judged{
	{"buy now, A", domain.EvaluationResultTrue},  // TP
	{"buy now, B", domain.EvaluationResultFalse}, // FP
	{"hello", domain.EvaluationResultTrue},       // FN
	{"hi", domain.EvaluationResultFalse},         // TN
	{"buy now, C", ""},                           // a positive nobody judged
}

// The live metrics of a label version: its label evaluations against the
// feedback on them.
func TestLabelVersionMetrics(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		l, vs := b.label(t, b.mine, "Spam", spamV1, spamV2)
		for _, j := range spamJudged {
			resp, err := b.eval.Evaluate(ctx, b.mine, labels.EvaluateLabelsRequest{Content: text(j.text), LabelVersionIDs: []string{vs[0].ID}})
			require.NoError(t, err)
			if j.expected != "" {
				_, err = b.eval.CreateFeedback(ctx, b.mine.ID, resp.Results[0].JobID, labels.NewFeedback{Expected: j.expected})
				require.NoError(t, err)
			}
		}
		for _, tc := range []struct {
			name    string
			version string
			want    []*domain.VersionMetric
		}{
			{"evaluated", vs[0].ID, []*domain.VersionMetric{{Label: "Spam", Evaluations: 5, Positives: 3, Annotations: 4,
				Confusion: domain.Confusion{TruePositives: 1, FalsePositives: 1, FalseNegatives: 1, TrueNegatives: 1}}}},
			{"never evaluated", vs[1].ID, []*domain.VersionMetric{{Label: "Spam"}}},
		} {
			got, err := b.quality.LabelVersionMetrics(ctx, b.mine, l.ID, tc.version, nil, nil)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, got, tc.name)
		}

		future := time.Now().Add(time.Hour)
		got, err := b.quality.LabelVersionMetrics(ctx, b.mine, l.ID, vs[0].ID, &future, nil)
		require.NoError(t, err)
		require.Zero(t, got[0].Evaluations, "nothing since an hour from now")
		_, err = b.quality.LabelVersionMetrics(ctx, b.mine, l.ID, vs[0].ID, &future, &future)
		requireField(t, err, "until", "until not after since")
		_, err = b.quality.LabelVersionMetrics(ctx, b.other, l.ID, vs[0].ID, nil, nil)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's label")
	})
}

// The live metrics of a policy version: the jobs evaluated with it against
// the feedback on them, one row per label.
func TestPolicyVersionMetrics(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setup(t, db)
		ctx := t.Context()
		p, v, err := b.policies.Create(ctx, b.mine, "spam", `LABEL "Spam" { =("buy now") } LABEL "Threat" { =("kill") }`)
		require.NoError(t, err)
		for _, j := range spamJudged {
			job, err := b.jobs.Submit(ctx, b.mine, jobs.Request{PolicyID: p.ID, Content: []domain.ContentInput{text(j.text)}, Wait: true})
			require.NoError(t, err)
			require.Equal(t, domain.JobCompleted, job.Status)
			if j.expected != "" {
				_, err = b.eval.CreateFeedback(ctx, b.mine.ID, job.ID, labels.NewFeedback{Label: "Spam", Expected: j.expected})
				require.NoError(t, err)
			}
		}
		got, err := b.quality.PolicyVersionMetrics(ctx, b.mine, p.ID, v.ID, nil, nil)
		require.NoError(t, err)
		require.Equal(t, []*domain.VersionMetric{
			{Label: "Spam", Evaluations: 5, Positives: 3, Annotations: 4,
				Confusion: domain.Confusion{TruePositives: 1, FalsePositives: 1, FalseNegatives: 1, TrueNegatives: 1}},
			{Label: "Threat", Evaluations: 5},
		}, got)
		_, err = b.quality.PolicyVersionMetrics(ctx, b.other, p.ID, v.ID, nil, nil)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's policy")
	})
}
