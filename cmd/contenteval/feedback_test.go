package main

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/stretchr/testify/require"
)

func (e *testEnv) postFeedback(token, jobID string, body any) client.FeedbackAnnotation {
	e.t.Helper()
	r := e.call(http.MethodPost, "/v1/jobs/"+jobID+"/feedback", token, mustJSON(e.t, body))
	return decodeAs[client.CreateFeedbackResponse](e.t, r).Annotation
}

func (e *testEnv) listFeedback(token, jobID, query string) client.ListFeedbackResponse {
	e.t.Helper()
	return decodeAs[client.ListFeedbackResponse](e.t, e.call(http.MethodGet, "/v1/jobs/"+jobID+"/feedback?"+query, token, ""))
}

// requireFeedbackOfOtherJobs checks that a job that is not complete takes
// no feedback, and that a policy-first account's job takes feedback on the
// result it names.
func requireFeedbackOfOtherJobs(t *testing.T, env *testEnv) {
	t.Helper()
	tok := env.LabelFirst.Token
	h := hitsFixture{env: env, store: persistence.NewJobs(env.Main.DB)}
	running, _ := h.recordJob(t, env.LabelFirst.ID, domain.JobRunning, 1)
	requireStatus(t, env.call(http.MethodPost, "/v1/jobs/"+running+"/feedback", tok, `{"expectedOutcome":"EVALUATION_RESULT_TRUE","label":"x"}`), http.StatusBadRequest, domain.FailedPrecondition)
	multi, results := h.recordJob(t, env.PolicyFirst.ID, domain.JobCompleted, 1, 1)
	r := env.call(http.MethodPost, "/v1/jobs/"+multi+"/feedback", env.PolicyFirst.Token, `{"expectedOutcome":"EVALUATION_RESULT_TRUE","label":"x"}`)
	m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
	require.Contains(t, fieldViolations(t, m), "jobResultId")
	pa := env.postFeedback(env.PolicyFirst.Token, multi, map[string]any{"expectedOutcome": "EVALUATION_RESULT_TRUE", "label": "x", "jobResultId": results[1]})
	require.Equal(t, results[1], pa.JobResultId)
	require.Equal(t, client.EVALUATIONRESULTUNSPECIFIED, pa.ActualOutcome, "no report: nothing to compare")
	require.Len(t, env.listFeedback(env.PolicyFirst.Token, multi, "").Annotations, 1)
}

func TestFeedback(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		f := newEvalFixture(t, env)
		res := env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": "you are stupld"},
			"labelVersionIds": []string{f.threatV.LabelVersionId}, "threshold": 0.5})
		jobID := *res.Results[0].JobUuid

		// The label defaults to the job's label; actualOutcome is the job's
		// thresholded result (TRUE at 0.5 for a 0.8 score).
		a := env.postFeedback(tok, jobID, map[string]any{"expectedOutcome": "EVALUATION_RESULT_FALSE", "comment": "sarcasm"})
		require.NotEmpty(t, a.Id)
		require.Equal(t, jobID, a.JobUuid)
		require.NotEmpty(t, a.JobResultId)
		require.Equal(t, "Insult", a.Label)
		require.Equal(t, f.threat.LabelId, *a.LabelId)
		require.Equal(t, f.threatV.LabelVersionId, *a.LabelVersionId)
		require.Equal(t, client.EVALUATIONRESULTFALSE, a.ExpectedOutcome)
		require.Equal(t, client.EVALUATIONRESULTTRUE, a.ActualOutcome)
		require.Equal(t, *res.ContentHash, *a.Target.ContentHash)
		require.Equal(t, "sarcasm", a.Comment)

		// An occurrence is a separate target.
		env.Clock.Add(time.Minute)
		occ := env.postFeedback(tok, jobID, map[string]any{"expectedOutcome": "EVALUATION_RESULT_TRUE",
			"target": map[string]any{"occurrence": map[string]any{"modality": "MODALITY_AUDIO", "startMs": "1000", "endMs": "2500"}}})
		require.NotEqual(t, a.Id, occ.Id)
		require.Equal(t, "1000", *occ.Target.Occurrence.StartMs)
		require.Equal(t, "2500", *occ.Target.Occurrence.EndMs)

		// Posting again for the same target and label replaces it in place.
		env.Clock.Add(time.Minute)
		b := env.postFeedback(tok, jobID, map[string]any{"expectedOutcome": "EVALUATION_RESULT_TRUE", "comment": "changed my mind",
			"jobResultId": a.JobResultId, "label": "Insult", "target": map[string]any{"contentHash": *res.ContentHash}})
		require.Equal(t, a.Id, b.Id)
		require.Equal(t, a.CreatedAt, b.CreatedAt)
		require.True(t, b.UpdatedAt.After(a.UpdatedAt))
		require.Equal(t, client.EVALUATIONRESULTTRUE, b.ExpectedOutcome)
		require.Equal(t, "changed my mind", b.Comment)

		list := env.listFeedback(tok, jobID, "")
		require.Len(t, list.Annotations, 2)
		require.Equal(t, a.Id, list.Annotations[0].Id, "the replaced annotation keeps its place")
		require.Equal(t, "changed my mind", list.Annotations[0].Comment)
		require.Equal(t, occ.Id, list.Annotations[1].Id)
		require.Nil(t, list.NextPageToken)

		// Paging, and tokens bound to the job.
		p1 := env.listFeedback(tok, jobID, "page_size=1")
		require.Len(t, p1.Annotations, 1)
		require.NotNil(t, p1.NextPageToken)
		tk := url.QueryEscape(*p1.NextPageToken)
		p2 := env.listFeedback(tok, jobID, "page_size=1&page_token="+tk)
		require.Equal(t, occ.Id, p2.Annotations[0].Id)
		require.Nil(t, p2.NextPageToken)
		for _, size := range []string{"0", "1000", "1001"} {
			require.Len(t, env.listFeedback(tok, jobID, "page_size="+size).Annotations, 2)
		}
		other := *(env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": "hello"},
			"labelVersionIds": []string{f.threatV.LabelVersionId}}).Results)[0].JobUuid
		empty := env.listFeedback(tok, other, "")
		require.NotNil(t, empty.Annotations)
		require.Empty(t, empty.Annotations)
		m := requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+other+"/feedback?page_token="+tk, tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "page_token")
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+jobID+"/feedback?page_size=-1", tok, ""), http.StatusBadRequest, domain.InvalidArgument)

		// FALSE results give FALSE actual outcomes.
		fb := env.postFeedback(tok, other, map[string]any{"expectedOutcome": "EVALUATION_RESULT_TRUE"})
		require.Equal(t, client.EVALUATIONRESULTFALSE, fb.ActualOutcome)

		// Validation.
		for _, body := range []string{
			`{"expectedOutcome":"EVALUATION_RESULT_TRUE","label":"Nope"}`,
			`{"expectedOutcome":"EVALUATION_RESULT_TRUE","target":{"contentHash":"sha256::ff"}}`,
			`{"expectedOutcome":"EVALUATION_RESULT_TRUE","target":{"occurrence":{"modality":"MODALITY_VIDEO"}}}`,
		} {
			requireStatus(t, env.call(http.MethodPost, "/v1/jobs/"+jobID+"/feedback", tok, body), http.StatusBadRequest, domain.InvalidArgument)
		}
		requireStatus(t, env.call(http.MethodPost, "/v1/jobs/"+jobID+"/feedback", tok, `{"expectedOutcome":"EVALUATION_RESULT_TRUE","jobResultId":"nope"}`), http.StatusNotFound, domain.NotFound)

		// Another account's job is NOT_FOUND for both operations.
		intruder := env.newAccount("intruder", domain.AccountLabelFirst)
		requireStatus(t, env.call(http.MethodPost, "/v1/jobs/"+jobID+"/feedback", intruder.Token, `{"expectedOutcome":"EVALUATION_RESULT_TRUE"}`), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+jobID+"/feedback", intruder.Token, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+jobID+"/feedback?page_token="+tk, intruder.Token, ""), http.StatusNotFound, domain.NotFound)
		require.Len(t, env.listFeedback(tok, jobID, "").Annotations, 2)

		// Jobs that are not complete take no feedback; policy-first accounts
		// give feedback on their jobs too (label required there).
		requireFeedbackOfOtherJobs(t, env)
	})
}

// TestFeedbackLabelIDsOfTheAccount: labelId and labelVersionId must be the
// caller's and agree with each other; another account's ids are NOT_FOUND
// and never stored.
func TestFeedbackLabelIDsOfTheAccount(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		f := newEvalFixture(t, env)
		other := env.newAccount("other", domain.AccountLabelFirst)
		ol := env.createLabel(other.Token, map[string]any{"name": "Theirs"})
		ov := env.createVersion(other.Token, ol.LabelId, map[string]any{"text": `=("x")`})
		res := env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": "you are stupld"},
			"labelVersionIds": []string{f.threatV.LabelVersionId}})
		jobID := *res.Results[0].JobUuid

		own, ownV := f.threat.LabelId, f.threatV.LabelVersionId
		for _, tc := range []struct {
			name                string
			labelID, versionID  string
			wantField           string // NOT_FOUND naming it; "" accepts
			wantLabel, wantVers string
		}{
			{name: "another account's label", labelID: ol.LabelId, wantField: "labelId"},
			{name: "another account's version", versionID: ov.LabelVersionId, wantField: "labelVersionId"},
			{name: "another account's label and version", labelID: ol.LabelId, versionID: ov.LabelVersionId, wantField: "labelId"},
			{name: "own label, another account's version", labelID: own, versionID: ov.LabelVersionId, wantField: "labelVersionId"},
			{name: "another account's label, own version", labelID: ol.LabelId, versionID: ownV, wantField: "labelId"},
			{name: "a version of another of the account's labels", labelID: own, versionID: f.archivedV.LabelVersionId, wantField: "labelVersionId"},
			{name: "unknown label", labelID: "nope", wantField: "labelId"},
			{name: "unknown version", versionID: "nope", wantField: "labelVersionId"},
			{name: "the job's, by default", wantLabel: own, wantVers: ownV},
			{name: "own label and its version", labelID: own, versionID: ownV, wantLabel: own, wantVers: ownV},
			{name: "a version alone names its label", versionID: f.archivedV.LabelVersionId, wantLabel: f.archived.LabelId, wantVers: f.archivedV.LabelVersionId},
			{name: "another own label takes no version of the job", labelID: f.disabled.LabelId, wantLabel: f.disabled.LabelId},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := map[string]any{"expectedOutcome": "EVALUATION_RESULT_TRUE"}
				if tc.labelID != "" {
					body["labelId"] = tc.labelID
				}
				if tc.versionID != "" {
					body["labelVersionId"] = tc.versionID
				}
				if tc.wantField != "" {
					m := requireStatus(t, env.call(http.MethodPost, "/v1/jobs/"+jobID+"/feedback", tok, mustJSON(t, body)), http.StatusNotFound, domain.NotFound)
					require.Contains(t, m["message"], tc.wantField+" ")
					return
				}
				a := env.postFeedback(tok, jobID, body)
				require.Equal(t, tc.wantLabel, orEmpty(a.LabelId))
				require.Equal(t, tc.wantVers, orEmpty(a.LabelVersionId))
			})
		}

		// Nothing of the other account was stored, and it sees nothing.
		for _, a := range env.listFeedback(tok, jobID, "").Annotations {
			require.NotEqual(t, ol.LabelId, orEmpty(a.LabelId))
			require.NotEqual(t, ov.LabelVersionId, orEmpty(a.LabelVersionId))
		}
	})
}

func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
