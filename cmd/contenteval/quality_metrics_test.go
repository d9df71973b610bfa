package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// feedback posts one annotation through the generated client.
func feedback(t *testing.T, c *client.ClientWithResponses, jobID string, req client.CreateFeedbackRequest) {
	t.Helper()
	r, err := c.CreateFeedbackWithResponse(context.Background(), jobID, req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
}

// metricRow is a VersionMetric without its rates, for comparing counts.
func metricRow(label string, evaluations, positives, annotations, tp, fp, tn, fn int32) client.VersionMetric {
	return client.VersionMetric{Label: label, Evaluations: evaluations, Positives: positives, Annotations: annotations,
		TruePositives: tp, FalsePositives: fp, TrueNegatives: tn, FalseNegatives: fn}
}

// withoutRates drops the rates, after checking them against the counts.
func withoutRates(t *testing.T, ms []client.VersionMetric) []client.VersionMetric {
	t.Helper()
	out := make([]client.VersionMetric, len(ms))
	for i, m := range ms {
		c := domain.Confusion{TruePositives: int(m.TruePositives), FalsePositives: int(m.FalsePositives),
			TrueNegatives: int(m.TrueNegatives), FalseNegatives: int(m.FalseNegatives)}
		for _, r := range []struct {
			got  *float64
			want func() (float64, bool)
		}{{m.Precision, c.Precision}, {m.Recall, c.Recall}, {m.F1, c.F1}} {
			v, ok := r.want()
			if !ok {
				require.Nil(t, r.got, "%s: a rate without denominator is omitted", m.Label)
				continue
			}
			require.NotNil(t, r.got, m.Label)
			require.InDelta(t, v, *r.got, 1e-12, m.Label)
		}
		m.Precision, m.Recall, m.F1 = nil, nil, nil
		out[i] = m
	}
	return out
}

func TestLabelVersionMetrics_FromFeedback(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.LabelFirst.Token
		c := env.labelClient()
		label := env.createLabel(tok, map[string]any{"name": "Spam"})
		id := label.LabelId
		v1 := env.createVersion(tok, id, map[string]any{"text": `=("buy now")`})
		v2 := env.createVersion(tok, id, map[string]any{"text": `=("free money")`})
		vid := v1.LabelVersionId
		// A dataset run's evaluations are not live traffic: they must not count.
		createExamples(t, c, id, spamDataset()[:4])
		waitForRun(t, c, id, startRun(t, c, id, vid, nil).DatasetRunId)

		// Six label evaluations, three an hour later than the others; then
		// feedback: TP, FP and FN on the first three, TN twice and an
		// annotation without a judgement on the later ones.
		start := env.Clock.Now()
		type eval struct {
			text     string
			expected client.EvaluationResult
		}
		evals := []eval{
			{"buy now please", client.EVALUATIONRESULTTRUE},   // TRUE: TP
			{"buy now, I said", client.EVALUATIONRESULTFALSE}, // TRUE: FP
			{"cheap watches", client.EVALUATIONRESULTTRUE},    // FALSE: FN
			{"hello there", client.EVALUATIONRESULTFALSE},     // FALSE: TN
			{"good morning", client.EVALUATIONRESULTFALSE},    // FALSE: TN
			{"buy now!", client.EVALUATIONRESULTUNSPECIFIED},  // TRUE: not judged
		}
		for i, e := range evals {
			if i == 3 {
				env.Clock.Add(time.Hour)
			}
			res := env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": e.text}, "labelVersionIds": []string{vid}})
			jobID := *(res.Results)[0].JobUuid
			feedback(t, c, jobID, client.CreateFeedbackRequest{ExpectedOutcome: e.expected})
		}
		// An annotation of an occurrence (timed media) is not counted.
		res := env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": "buy now"}, "labelVersionIds": []string{vid}})
		feedback(t, c, *(res.Results)[0].JobUuid, client.CreateFeedbackRequest{ExpectedOutcome: client.EVALUATIONRESULTFALSE,
			Target: &client.FeedbackTarget{Occurrence: &client.Occurrence{Modality: ptr(client.MODALITYTEXT), StartMs: ptr("0")}}})

		get := func(version string, since, until *time.Time) []client.VersionMetric {
			t.Helper()
			r, err := c.GetLabelVersionMetricsWithResponse(ctx, id, version, &client.GetLabelVersionMetricsParams{Since: since, Until: until})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			specChecked(t, r.HTTPResponse, r.Body)
			return r.JSON200.Metrics
		}
		require.Equal(t, []client.VersionMetric{metricRow("Spam", 7, 4, 5, 1, 1, 2, 1)}, withoutRates(t, get(vid, nil, nil)))
		m := get(vid, nil, nil)[0]
		require.InDelta(t, 0.5, *m.Precision, 1e-12)
		require.InDelta(t, 0.5, *m.Recall, 1e-12)
		require.InDelta(t, 0.5, *m.F1, 1e-12)

		half := start.Add(30 * time.Minute)
		require.Equal(t, []client.VersionMetric{metricRow("Spam", 3, 2, 3, 1, 1, 0, 1)}, withoutRates(t, get(vid, nil, &half)))
		require.Equal(t, []client.VersionMetric{metricRow("Spam", 4, 2, 2, 0, 0, 2, 0)}, withoutRates(t, get(vid, &half, nil)))
		require.Equal(t, []client.VersionMetric{metricRow("Spam", 3, 2, 3, 1, 1, 0, 1)}, withoutRates(t, get(vid, &start, &half)), "since is inclusive")
		// A version without traffic: its label, all zero, no rates.
		require.Equal(t, []client.VersionMetric{metricRow("Spam", 0, 0, 0, 0, 0, 0, 0)}, withoutRates(t, get(v2.LabelVersionId, nil, nil)))

		// until not after since; unknown version; another account's label.
		path := "/v1/labels/" + id + "/versions/" + vid + "/metrics"
		q := url.Values{"since": {half.Format(time.RFC3339)}, "until": {start.Format(time.RFC3339)}}
		requireStatus(t, env.call(http.MethodGet, path+"?"+q.Encode(), tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodGet, path+"?since=yesterday", tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions/nope/metrics", tok, ""), http.StatusNotFound, domain.NotFound)
		other := env.newAccount("other", domain.AccountLabelFirst)
		requireStatus(t, env.call(http.MethodGet, path, other.Token, ""), http.StatusNotFound, domain.NotFound)
	})
}

func TestPolicyVersionMetrics_FromFeedback(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		c := env.Client(tok)
		pr, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
		require.NoError(t, err)
		policyID, v1 := pr.JSON200.Policy.PolicyId, pr.JSON200.PolicyVersion.PolicyVersionId

		// Jobs of one or two items; feedback per label and result.
		texts := []string{"i will kill you", "buy now", "i will kill you, buy now", "hello"}
		job := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{textItem(texts[0], nil), textItem(texts[1], nil)}})
		rs := *job.Results
		feedback(t, c, job.JobUuid, client.CreateFeedbackRequest{JobResultId: &rs[0].JobResultId, Label: ptr("Threat"), ExpectedOutcome: client.EVALUATIONRESULTTRUE}) // TP
		feedback(t, c, job.JobUuid, client.CreateFeedbackRequest{JobResultId: &rs[1].JobResultId, Label: ptr("Threat"), ExpectedOutcome: client.EVALUATIONRESULTTRUE}) // FN
		feedback(t, c, job.JobUuid, client.CreateFeedbackRequest{JobResultId: &rs[1].JobResultId, Label: ptr("Spam"), ExpectedOutcome: client.EVALUATIONRESULTFALSE})  // FP
		for _, text := range texts[2:] {
			j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{textItem(text, nil)}})
			feedback(t, c, j.JobUuid, client.CreateFeedbackRequest{Label: ptr("Spam"), ExpectedOutcome: client.EVALUATIONRESULTFALSE}) // FP, TN
		}
		// A job of a later version does not count for the first.
		vr, err := c.CreatePolicyVersionWithResponse(ctx, policyID, client.CreatePolicyVersionRequest{Text: testPolicyText})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, vr.StatusCode(), "%s", vr.Body)
		env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{textItem("buy now", nil)}})

		r, err := c.GetPolicyVersionMetricsWithResponse(ctx, policyID, v1, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		specChecked(t, r.HTTPResponse, r.Body)
		require.Equal(t, []client.VersionMetric{
			metricRow("Threat", 4, 2, 2, 1, 0, 0, 1),
			metricRow("Spam", 4, 2, 3, 0, 2, 1, 0),
		}, withoutRates(t, r.JSON200.Metrics))
		m := r.JSON200.Metrics[1]
		require.InDelta(t, 0.0, *m.Precision, 1e-12)
		require.Nil(t, m.Recall, "no expected positives")
		require.InDelta(t, 0.0, *m.F1, 1e-12)

		r, err = c.GetPolicyVersionMetricsWithResponse(ctx, policyID, vr.JSON200.PolicyVersion.PolicyVersionId, nil)
		require.NoError(t, err)
		require.Equal(t, []client.VersionMetric{metricRow("Threat", 1, 0, 0, 0, 0, 0, 0), metricRow("Spam", 1, 1, 0, 0, 0, 0, 0)}, withoutRates(t, r.JSON200.Metrics))

		other := env.newAccount("other", domain.AccountPolicyFirst)
		for _, path := range []string{
			fmt.Sprintf("/v1/policies/%s/versions/%s/metrics", policyID, v1),
			fmt.Sprintf("/v1/policies/%s/versions/%s/metrics", env.createPolicy(other.Token, "theirs"), v1),
		} {
			requireStatus(t, env.call(http.MethodGet, path, other.Token, ""), http.StatusNotFound, domain.NotFound)
		}
		requireStatus(t, env.call(http.MethodGet, fmt.Sprintf("/v1/policies/%s/versions/nope/metrics", policyID), tok, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, fmt.Sprintf("/v1/policies/%s/versions/%s/metrics", policyID, v1), env.LabelFirst.Token, ""), http.StatusBadRequest, domain.FailedPrecondition)
	})
}
