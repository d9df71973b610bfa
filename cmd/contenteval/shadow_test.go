package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"net/http"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// shadowPolicyText is testPolicyText with a wider Spam and a new label.
const shadowPolicyText = `LABEL "Threat": "remove" {
    =("i will kill you")
}
SECTION "Spam": "review" {
    ANY(=("buy now"), =("free money"))
}
LABEL "Scam": "remove" {
    =("wire transfer")
}
`

// shadowTexts cycle through the jobs of TestShadowVersion: the live
// (testPolicyText) and the shadow (shadowPolicyText) versions agree on the
// first two and the last, and disagree on Spam for the third and on Scam
// (a label the live version lacks) for the fourth.
var shadowTexts = []string{"i will kill you", "buy now", "free money", "wire transfer now", "hello"}

// jobView is what a client sees of a finished job, without ids and times:
// the same content evaluated by the same version must look the same.
type jobView struct {
	Status  client.JobStatus
	Version string
	Reports []client.EvaluationReport
	Hits    []client.LabelHit
}

func viewOf(t *testing.T, c *client.ClientWithResponses, j client.Job) jobView {
	t.Helper()
	v := jobView{Status: j.Status, Version: *j.PolicyVersionId}
	for _, r := range *j.Results {
		rep := *r.Report
		rep.PolicyVersionId = ""
		v.Reports = append(v.Reports, rep)
	}
	hr, err := c.ListJobLabelHitsWithResponse(context.Background(), j.JobUuid, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, hr.StatusCode(), "%s", hr.Body)
	for _, h := range *hr.JSON200.Labels {
		h.JobResultId = ""
		v.Hits = append(v.Hits, h)
	}
	return v
}

// webhookView is a delivered completion webhook without ids and times.
type webhookView struct {
	Type    string
	Status  client.JobStatus
	Reports []client.EvaluationReport
}

func webhookViews(t *testing.T, got []receivedWebhook) map[string]webhookView {
	t.Helper()
	out := map[string]webhookView{}
	for _, w := range got {
		var p struct {
			Type string     `json:"type"`
			Job  client.Job `json:"job"`
		}
		require.NoError(t, json.Unmarshal(w.body, &p))
		v := webhookView{Type: p.Type, Status: p.Job.Status}
		for _, r := range *p.Job.Results {
			rep := *r.Report
			rep.PolicyVersionId = ""
			v.Reports = append(v.Reports, rep)
		}
		out[p.Job.JobUuid] = v
	}
	return out
}

// requireShadowDisagreements checks the disagreements of shadow version
// v2 with the live jobs after, exactly, read in pages.
func requireShadowDisagreements(t *testing.T, c *client.ClientWithResponses, policyID, v2 string, after []client.Job) {
	t.Helper()
	ctx := context.Background()
	var want []client.ShadowDisagreement
	for i, j := range after {
		r := (*j.Results)[0]
		d := client.ShadowDisagreement{JobUuid: j.JobUuid, JobResultId: r.JobResultId, ContentHash: *r.ContentHash}
		switch i % len(shadowTexts) {
		case 2:
			d.Label, d.ActiveOutcome, d.ShadowOutcome = "Spam", client.OUTCOMEFALSE, client.OUTCOMETRUE
		case 3:
			d.Label, d.ActiveOutcome, d.ShadowOutcome = "Scam", client.OUTCOMEUNSPECIFIED, client.OUTCOMETRUE
		default:
			continue
		}
		want = append(want, d)
	}
	var got []client.ShadowDisagreement
	params := &client.ListShadowResultsParams{PageSize: ptr[int32](7)}
	for {
		lr, err := c.ListShadowResultsWithResponse(ctx, policyID, v2, params)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, lr.StatusCode(), "%s", lr.Body)
		specChecked(t, lr.HTTPResponse, lr.Body)
		got = append(got, lr.JSON200.Disagreements...)
		if lr.JSON200.NextPageToken == nil {
			break
		}
		params.PageToken = lr.JSON200.NextPageToken
	}
	require.Equal(t, want, got)

}

// requireShadowMetrics checks the metrics of the live version v1 and the
// shadow v2 once feedback judged two of the live results after.
func requireShadowMetrics(t *testing.T, c *client.ClientWithResponses, policyID, v1, v2 string, after []client.Job, n int32) {
	t.Helper()
	ctx := context.Background()
	feedback(t, c, after[2].JobUuid, client.CreateFeedbackRequest{Label: ptr("Spam"), ExpectedOutcome: client.EVALUATIONRESULTTRUE})
	feedback(t, c, after[4].JobUuid, client.CreateFeedbackRequest{Label: ptr("Spam"), ExpectedOutcome: client.EVALUATIONRESULTFALSE})
	mr, err := c.GetPolicyVersionMetricsWithResponse(ctx, policyID, v2, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, mr.StatusCode(), "%s", mr.Body)
	require.Equal(t, []client.VersionMetric{
		metricRow("Threat", n, 10, 0, 0, 0, 0, 0),
		metricRow("Spam", n, 20, 2, 1, 0, 1, 0),
		metricRow("Scam", n, 10, 0, 0, 0, 0, 0),
	}, withoutRates(t, mr.JSON200.Metrics))
	mr, err = c.GetPolicyVersionMetricsWithResponse(ctx, policyID, v1, nil)
	require.NoError(t, err)
	require.Equal(t, []client.VersionMetric{
		metricRow("Threat", 2*n, 20, 0, 0, 0, 0, 0),
		metricRow("Spam", 2*n, 20, 2, 0, 0, 1, 1),
	}, withoutRates(t, mr.JSON200.Metrics))

}

// requireShadowActivation checks the versions' modes, then activates the
// shadow v2: it ends the shadow, and jobs are evaluated with v2.
func requireShadowActivation(t *testing.T, env *testEnv, policyID, v2 string) {
	t.Helper()
	ctx := context.Background()
	tok := env.PolicyFirst.Token
	c := env.Client(tok)
	lv, err := c.ListPolicyVersionsWithResponse(ctx, policyID, nil)
	require.NoError(t, err)
	modes := []client.PolicyVersionMode{}
	for _, v := range lv.JSON200.PolicyVersions {
		modes = append(modes, *v.Mode)
	}
	require.Equal(t, []client.PolicyVersionMode{client.POLICYVERSIONMODEACTIVE, client.POLICYVERSIONMODESHADOW}, modes)
	ar, err := c.ActivatePolicyVersionWithResponse(ctx, policyID, v2)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ar.StatusCode(), "%s", ar.Body)
	require.Equal(t, v2, ar.JSON200.Policy.ActiveVersionId)
	require.Nil(t, ar.JSON200.Policy.ShadowVersionId)
	j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{textItem("wire transfer", nil)}})
	require.Equal(t, v2, *j.PolicyVersionId)
	require.Contains(t, (*j.Results)[0].Report.LabelMatches, "Scam")

}

// requireDraftAndUnsampledShadow checks that a draft changes nothing and
// that a shadow sampling nothing queues nothing (v2 is the active version).
func requireDraftAndUnsampledShadow(t *testing.T, env *testEnv, policyID, v2 string) {
	t.Helper()
	ctx := context.Background()
	tok := env.PolicyFirst.Token
	c := env.Client(tok)
	dr, err := c.CreatePolicyVersionWithResponse(ctx, policyID, client.CreatePolicyVersionRequest{Text: testPolicyText, Mode: ptr(client.POLICYVERSIONMODEDRAFT)})
	require.NoError(t, err)
	require.Equal(t, client.POLICYVERSIONMODEDRAFT, *dr.JSON200.PolicyVersion.Mode)
	sr, err := c.CreatePolicyVersionWithResponse(ctx, policyID, client.CreatePolicyVersionRequest{Text: testPolicyText,
		Mode: ptr(client.POLICYVERSIONMODESHADOW), ShadowSampleRate: ptr(0.0)})
	require.NoError(t, err)
	v4 := sr.JSON200.PolicyVersion.PolicyVersionId
	for range 5 {
		env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{textItem("buy now", nil)}})
	}
	var shadowJobs int
	require.NoError(t, env.Main.DB.GetContext(ctx, &shadowJobs, env.Main.DB.Rebind(`SELECT COUNT(*) FROM jobs WHERE job_type = ? AND policy_version_id = ?`),
		string(domain.JobTypeShadow), v4))
	require.Zero(t, shadowJobs)
	gp, err := c.GetPolicyWithResponse(ctx, policyID)
	require.NoError(t, err)
	require.Equal(t, v2, gp.JSON200.Policy.ActiveVersionId)
	require.Equal(t, v4, *gp.JSON200.Policy.ShadowVersionId)
	require.Equal(t, 0.0, *gp.JSON200.Policy.ShadowSampleRate)
}

// TestShadowVersion runs 50 synchronous jobs (with webhooks) without a
// shadow version and 50 with one evaluating every job: what the client
// sees of the jobs (results, hits, webhooks) is the same, and the shadow's
// stats and disagreements are exact.
func TestShadowVersion(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true; c.WebhookPoll = 20 * time.Millisecond }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		c := env.Client(tok)
		acct, err := env.Main.Accounts.GetAccount(ctx, env.PolicyFirst.ID)
		require.NoError(t, err)
		srv, received := webhookReceiver(t, acct.WebhookSecret)
		pr, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
		require.NoError(t, err)
		policyID, v1 := pr.JSON200.Policy.PolicyId, pr.JSON200.PolicyVersion.PolicyVersionId
		require.Equal(t, client.POLICYVERSIONMODEACTIVE, *pr.JSON200.PolicyVersion.Mode)

		const n = 50
		runJobs := func() ([]client.Job, []jobView) {
			var jobs []client.Job
			var views []jobView
			for i := range n {
				j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
					ContentData: []client.ContentData{textItem(shadowTexts[i%len(shadowTexts)], nil)},
					Webhook:     &client.Webhook{Url: srv.URL + "/hook"}})
				require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
				jobs = append(jobs, j)
				views = append(views, viewOf(t, c, j))
			}
			return jobs, views
		}
		before, beforeViews := runJobs()

		// A shadow version: the policy names it, the active version stays.
		vr, err := c.CreatePolicyVersionWithResponse(ctx, policyID, client.CreatePolicyVersionRequest{
			Text: shadowPolicyText, Mode: ptr(client.POLICYVERSIONMODESHADOW)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, vr.StatusCode(), "%s", vr.Body)
		v2 := vr.JSON200.PolicyVersion.PolicyVersionId
		require.Equal(t, client.POLICYVERSIONMODESHADOW, *vr.JSON200.PolicyVersion.Mode)
		require.Equal(t, 1.0, *vr.JSON200.PolicyVersion.ShadowSampleRate)
		gp, err := c.GetPolicyWithResponse(ctx, policyID)
		require.NoError(t, err)
		require.Equal(t, v1, gp.JSON200.Policy.ActiveVersionId)
		require.Equal(t, v2, *gp.JSON200.Policy.ShadowVersionId)

		after, afterViews := runJobs()
		for i := range n {
			require.Equal(t, beforeViews[i], afterViews[i], "job %d (%q) looks the same with a shadow", i, shadowTexts[i%len(shadowTexts)])
			require.Equal(t, v1, afterViews[i].Version)
		}
		// Webhooks: one per job, the same as without a shadow, and none for
		// the shadow's evaluations.
		hooks := webhookViews(t, waitForWebhooks(t, received, 2*n))
		for i := range n {
			require.Equal(t, hooks[before[i].JobUuid], hooks[after[i].JobUuid], "job %d's webhook", i)
			require.Equal(t, "job.completed", hooks[after[i].JobUuid].Type)
		}

		// The shadow evaluates every live job of the second run, from the
		// queue, after the live result is recorded.
		stats := waitForShadow(t, c, policyID, v2, n)
		require.Equal(t, client.ShadowStats{Evaluated: n, Agreements: 30, Disagreements: 20, Labels: []client.ShadowLabelStats{
			{Label: "Scam", ActiveTrue: 0, ShadowTrue: 10, BothTrue: 0},
			{Label: "Spam", ActiveTrue: 10, ShadowTrue: 20, BothTrue: 10},
			{Label: "Threat", ActiveTrue: 10, ShadowTrue: 10, BothTrue: 10},
		}}, stats)

		// The disagreements, exactly, paged.
		requireShadowDisagreements(t, c, policyID, v2, after)

		// Nothing of the shadow is a client job: 2n jobs listed, 2n
		// webhook events, each job's results and hits as they were.
		jl, err := c.ListJobsWithResponse(ctx, &client.ListJobsParams{PageSize: ptr[int32](1000)})
		require.NoError(t, err)
		require.Len(t, jl.JSON200.Jobs, 2*n)
		var events int
		require.NoError(t, env.Main.DB.GetContext(ctx, &events, env.Main.DB.Rebind(`SELECT COUNT(*) FROM webhook_events WHERE account_id = ?`), env.PolicyFirst.ID))
		require.Equal(t, 2*n, events)
		for i, j := range after {
			g, err := c.GetJobWithResponse(ctx, j.JobUuid)
			require.NoError(t, err)
			require.Equal(t, afterViews[i], viewOf(t, c, g.JSON200.Job))
		}

		// The draft measured on live traffic: feedback on the live results
		// judges the shadow's outcomes too.
		requireShadowMetrics(t, c, policyID, v1, v2, after, n)

		// Versions list their modes; activating the shadow ends it.
		requireShadowActivation(t, env, policyID, v2)

		// A draft changes nothing; a shadow sampling nothing queues nothing.
		requireDraftAndUnsampledShadow(t, env, policyID, v2)
	})
}

// TestShadowVersion_Queued: asynchronous jobs and batch items are sampled
// by the worker that runs them, and an item the shadow cannot evaluate is
// reported FAILED for every label.
func TestShadowVersion_Queued(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		c := env.Client(tok)
		policyID := env.createPolicy(tok, "main")
		vr, err := c.CreatePolicyVersionWithResponse(ctx, policyID, client.CreatePolicyVersionRequest{
			Text: shadowPolicyText, Mode: ptr(client.POLICYVERSIONMODESHADOW), ShadowSampleRate: ptr(1.0)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, vr.StatusCode(), "%s", vr.Body)
		v2 := vr.JSON200.PolicyVersion.PolicyVersionId
		j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID,
			ContentData: []client.ContentData{textItem("free money", nil), textItem("hello", nil)}})
		j = env.waitForJob(tok, j.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		stats := waitForShadow(t, c, policyID, v2, 2)
		require.Equal(t, int32(2), stats.Evaluated)
		require.Equal(t, int32(1), stats.Disagreements)
	})
}

func TestShadowVersion_ErrorsAndScope(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		policyID := env.createPolicy(tok, "main")
		versions := "/v1/policies/" + policyID + "/versions"
		for _, tc := range []struct{ name, body, field string }{
			{"rate without shadow", `{"text":"LABEL \"A\" { =(\"a\") }","shadowSampleRate":0.5}`, "shadowSampleRate"},
			{"rate of a draft", `{"text":"LABEL \"A\" { =(\"a\") }","mode":"POLICY_VERSION_MODE_DRAFT","shadowSampleRate":0.5}`, "shadowSampleRate"},
			{"rate above 1", `{"text":"LABEL \"A\" { =(\"a\") }","mode":"POLICY_VERSION_MODE_SHADOW","shadowSampleRate":1.5}`, "shadowSampleRate"},
			{"unknown mode", `{"text":"LABEL \"A\" { =(\"a\") }","mode":"POLICY_VERSION_MODE_SOMETIMES"}`, "mode"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				m := requireStatus(t, env.call(http.MethodPost, versions, tok, tc.body), http.StatusBadRequest, domain.InvalidArgument)
				require.Contains(t, fieldViolations(t, m), tc.field)
			})
		}
		r := env.call(http.MethodPost, versions, tok, `{"text":"LABEL \"A\" { =(\"a\") }","mode":"POLICY_VERSION_MODE_SHADOW"}`)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		v := decodeAs[client.CreatePolicyVersionResponse](t, r).PolicyVersion
		vid := v.PolicyVersionId

		other := env.newAccount("other", domain.AccountPolicyFirst)
		theirs := env.createPolicy(other.Token, "theirs")
		for _, tc := range []struct{ method, path string }{
			{http.MethodPost, versions + "/" + vid + "/activate"},
			{http.MethodGet, versions + "/" + vid + "/shadow-stats"},
			{http.MethodGet, versions + "/" + vid + "/shadow-results"},
			{http.MethodPost, "/v1/policies/" + theirs + "/versions/" + vid + "/activate"},
			{http.MethodGet, "/v1/policies/" + theirs + "/versions/" + vid + "/shadow-stats"},
			{http.MethodGet, "/v1/policies/" + theirs + "/versions/" + vid + "/shadow-results"},
		} {
			t.Run("other account "+tc.method+" "+tc.path, func(t *testing.T) {
				requireStatus(t, env.call(tc.method, tc.path, other.Token, ""), http.StatusNotFound, domain.NotFound)
			})
		}
		requireStatus(t, env.call(http.MethodPost, versions+"/nope/activate", tok, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, versions+"/"+vid+"/shadow-results?pageSize=-1", tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodGet, versions+"/"+vid+"/shadow-stats", env.LabelFirst.Token, ""), http.StatusBadRequest, domain.FailedPrecondition)
		// The intruder's attempts changed nothing.
		gp, err := env.Client(tok).GetPolicyWithResponse(context.Background(), policyID)
		require.NoError(t, err)
		require.Equal(t, vid, *gp.JSON200.Policy.ShadowVersionId)
		require.NotEqual(t, vid, gp.JSON200.Policy.ActiveVersionId)
	})
}

// waitForShadow waits until the shadow version has evaluated at least n
// live results and returns its stats.
func waitForShadow(t *testing.T, c *client.ClientWithResponses, policyID, versionID string, n int) client.ShadowStats {
	t.Helper()
	return waitForShadowWithin(t, c, policyID, versionID, n, 2*time.Minute)
}

// waitForShadowWithin is waitForShadow for shadow work that may take up to
// within on a loaded machine.
func waitForShadowWithin(t *testing.T, c *client.ClientWithResponses, policyID, versionID string, n int, within time.Duration) client.ShadowStats {
	t.Helper()
	var stats client.ShadowStats
	testwait.For(t, within, fmt.Sprintf("%d shadow evaluations", n), func() (bool, error) {
		sr, err := c.GetShadowStatsWithResponse(context.Background(), policyID, versionID)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, sr.StatusCode(), "%s", sr.Body)
		stats = *sr.JSON200
		return stats.Evaluated >= int32(n), fmt.Errorf("%d evaluated", stats.Evaluated)
	})
	return stats
}
