package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/stretchr/testify/require"
)

// testPolicyText is a two-label policy of exact phrases, so outcomes are
// deterministic.
const testPolicyText = `LABEL "Threat": "remove" {
    =("i will kill you")
}
SECTION "Spam": "review" {
    =("buy now")
}
`

// specChecked validates a generated client's response against openapi.yaml.
func specChecked(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	requireMatchesSpec(t, rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: body, Req: resp.Request})
}

// callT is env.call for subtests: failures end t, not the parent test.
func callT(t *testing.T, env *testEnv, method, path, token, body string) rawResponse {
	t.Helper()
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	req, err := http.NewRequest(method, env.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := specClient.Do(req)
	require.NoError(t, err)
	req.Body = nil
	r := readResponse(t, req, resp)
	requireMatchesSpec(t, r)
	return r
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256::" + hex.EncodeToString(sum[:])
}

func ptr[T any](v T) *T { return &v }

// createPolicy creates a policy with testPolicyText and returns its id.
func (e *testEnv) createPolicy(token, key string) string {
	e.t.Helper()
	r, err := e.Client(token).CreatePolicyWithResponse(context.Background(), client.CreatePolicyRequest{PolicyKey: key, Text: testPolicyText})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	return r.JSON200.Policy.PolicyId
}

func textItem(s string, meta map[string]string) client.ContentData {
	c := client.ContentData{Text: &s}
	if meta != nil {
		m := client.StringMap(meta)
		c.Metadata = &m
	}
	return c
}

// submit posts a job and returns it, failing on any non-200.
func (e *testEnv) submit(token string, req client.CreateJobRequest) client.Job {
	e.t.Helper()
	r, err := e.Client(token).CreateJobWithResponse(context.Background(), req)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	specChecked(e.t, r.HTTPResponse, r.Body)
	return r.JSON200.Job
}

// waitForJob polls GET /v1/jobs/{id} until the job is terminal.
func (e *testEnv) waitForJob(token, id string) client.Job {
	e.t.Helper()
	deadline := time.Now().Add(90 * time.Second) // generous: -race on a busy 2-core machine
	for {
		r, err := e.Client(token).GetJobWithResponse(context.Background(), id)
		require.NoError(e.t, err)
		require.Equal(e.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		j := r.JSON200.Job
		switch j.Status {
		case client.JOBSTATUSCOMPLETED, client.JOBSTATUSFAILED, client.JOBSTATUSCANCELED:
			specChecked(e.t, r.HTTPResponse, r.Body)
			return j
		}
		require.Nil(e.t, j.Results, "an unfinished job carries no results")
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s still %s", id, j.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPolicies(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.Client(env.PolicyFirst.Token)

		r, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		specChecked(t, r.HTTPResponse, r.Body)
		p, v := r.JSON200.Policy, r.JSON200.PolicyVersion
		require.Equal(t, "main", p.PolicyKey)
		require.Equal(t, v.PolicyVersionId, p.ActiveVersionId)
		require.False(t, p.Disabled)
		require.EqualValues(t, 1, v.SequentialVersion)
		require.Equal(t, testPolicyText, v.Text)
		require.Positive(t, v.TokenCountsV2.DslTokenCount)
		require.Positive(t, v.ComplexityScore)

		// Duplicate key, compile errors, bad key.
		raw := env.call(http.MethodPost, "/v1/policies", env.PolicyFirst.Token, `{"policyKey":"main","text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusConflict, domain.AlreadyExists)
		raw = env.call(http.MethodPost, "/v1/policies", env.PolicyFirst.Token, `{"policyKey":"bad","text":"LABEL \"A\" {\n  =(\"a\"\n}\nFOO"}`)
		m := requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		details := m["details"].([]any)
		require.Equal(t, "type.googleapis.com/contenteval.CompilationErrors", details[0].(map[string]any)["@type"])
		errs := details[0].(map[string]any)["errors"].([]any)
		require.NotEmpty(t, errs)
		require.Positive(t, errs[0].(map[string]any)["line"])
		raw = env.call(http.MethodPost, "/v1/policies", env.PolicyFirst.Token, `{"policyKey":"-x","text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		raw = env.call(http.MethodPost, "/v1/policies", env.LabelFirst.Token, `{"policyKey":"x","text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusBadRequest, domain.FailedPrecondition)

		// Get; another account's policy is NOT_FOUND.
		g, err := c.GetPolicyWithResponse(ctx, p.PolicyId)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, g.StatusCode())
		require.Equal(t, p.PolicyId, g.JSON200.Policy.PolicyId)
		other := env.newAccount("other", domain.AccountPolicyFirst)
		raw = env.call(http.MethodGet, "/v1/policies/"+p.PolicyId, other.Token, "")
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)
		raw = env.call(http.MethodGet, "/v1/policies/nope", env.PolicyFirst.Token, "")
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)

		// A new version becomes active.
		nv, err := c.CreatePolicyVersionWithResponse(ctx, p.PolicyId, client.CreatePolicyVersionRequest{Text: `LABEL "Only" { =("x") }`})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, nv.StatusCode(), "%s", nv.Body)
		specChecked(t, nv.HTTPResponse, nv.Body)
		require.EqualValues(t, 2, nv.JSON200.PolicyVersion.SequentialVersion)
		g, err = c.GetPolicyWithResponse(ctx, p.PolicyId)
		require.NoError(t, err)
		require.Equal(t, nv.JSON200.PolicyVersion.PolicyVersionId, g.JSON200.Policy.ActiveVersionId)
		raw = env.call(http.MethodPost, "/v1/policies/"+p.PolicyId+"/versions", env.PolicyFirst.Token, `{"text":"LABEL {"}`)
		requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		raw = env.call(http.MethodPost, "/v1/policies/"+p.PolicyId+"/versions", other.Token, `{"text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)

		// Versions, oldest first, paged.
		lv, err := c.ListPolicyVersionsWithResponse(ctx, p.PolicyId, &client.ListPolicyVersionsParams{PageSize: ptr(int32(1))})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, lv.StatusCode(), "%s", lv.Body)
		specChecked(t, lv.HTTPResponse, lv.Body)
		require.Len(t, lv.JSON200.PolicyVersions, 1)
		require.EqualValues(t, 1, lv.JSON200.PolicyVersions[0].SequentialVersion)
		require.NotNil(t, lv.JSON200.NextPageToken)
		lv, err = c.ListPolicyVersionsWithResponse(ctx, p.PolicyId, &client.ListPolicyVersionsParams{PageSize: ptr(int32(1)), PageToken: lv.JSON200.NextPageToken})
		require.NoError(t, err)
		require.EqualValues(t, 2, lv.JSON200.PolicyVersions[0].SequentialVersion)
		require.Nil(t, lv.JSON200.NextPageToken)

		// Policies, newest first, paged; tokens are bound to the account.
		env.Clock.Add(time.Second)
		second := env.createPolicy(env.PolicyFirst.Token, "second")
		lp, err := c.ListPoliciesWithResponse(ctx, &client.ListPoliciesParams{PageSize: ptr(int32(1))})
		require.NoError(t, err)
		specChecked(t, lp.HTTPResponse, lp.Body)
		require.Equal(t, second, lp.JSON200.Policies[0].PolicyId)
		tok := *lp.JSON200.NextPageToken
		lp, err = c.ListPoliciesWithResponse(ctx, &client.ListPoliciesParams{PageSize: ptr(int32(1)), PageToken: &tok})
		require.NoError(t, err)
		require.Equal(t, p.PolicyId, lp.JSON200.Policies[0].PolicyId)
		require.Nil(t, lp.JSON200.NextPageToken)
		raw = env.call(http.MethodGet, "/v1/policies?pageToken="+tok, other.Token, "")
		requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
	})
}

func TestCreateJobSync(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		texts := []string{"I will kill you, and buy now", "a nice day", "buy now!"}
		j := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{
			PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{
				textItem(texts[0], map[string]string{"user": "u1"}), textItem(texts[1], nil), textItem(texts[2], map[string]string{"n": "3"}),
			},
			Options: &client.EvaluationOptions{Options: &client.StringMap{"ocr": "true"}},
		})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		require.Equal(t, client.JOBTYPESTANDARD, j.JobType)
		require.Equal(t, env.PolicyFirst.ID, j.CustomerId)
		require.Equal(t, policyID, *j.PolicyId)
		require.NotEmpty(t, *j.PolicyVersionId)
		require.Equal(t, 0.5, j.Threshold, "threshold defaults to 0.5")
		require.NotNil(t, j.Completed)
		require.Nil(t, j.Error)
		require.Len(t, j.ContentData, 3)
		require.Len(t, *j.Results, 3)
		wantMatches := []map[string]float64{{"Threat": 1, "Spam": 1}, {}, {"Spam": 1}}
		wantOutcome := []client.Outcome{client.OUTCOMETRUE, client.OUTCOMEFALSE, client.OUTCOMETRUE}
		for i, r := range *j.Results {
			require.Equal(t, sha(texts[i]), *r.ContentHash, "result %d in request order", i)
			require.Equal(t, sha(texts[i]), *j.ContentData[i].ContentHash)
			require.NotEmpty(t, r.JobResultId)
			require.Equal(t, j.JobUuid, r.JobUuid)
			rep := r.Report
			require.Equal(t, wantOutcome[i], rep.Result, "result %d", i)
			require.Equal(t, wantMatches[i], rep.LabelMatches, "result %d", i)
			require.Equal(t, policyID, rep.PolicyId)
			require.Equal(t, "main", rep.PolicyKey)
			require.Equal(t, *j.PolicyVersionId, rep.PolicyVersionId)
			require.Equal(t, sha(texts[i]), *rep.ContentHash)
			require.Len(t, rep.SectionEvaluationReports, 2)
			require.Equal(t, "Threat", rep.SectionEvaluationReports[0].Name)
			require.Equal(t, "remove", rep.SectionEvaluationReports[0].Message)
		}
		require.Equal(t, client.StringMap{"user": "u1"}, *(*j.Results)[0].Report.ContentMetadata, "metadata echoed")
		require.Equal(t, client.StringMap{"user": "u1"}, *j.ContentData[0].Metadata)

		// GET returns the same completed job.
		got := env.waitForJob(env.PolicyFirst.Token, j.JobUuid)
		require.Equal(t, j.Results, got.Results)

		// Label hits are recorded for the TRUE sections of text content.
		hits, err := persistence.NewJobs(env.Main.DB).ListLabelHits(context.Background(), j.JobUuid, "", -1, 100)
		require.NoError(t, err)
		require.Len(t, hits, 3)
		r0, r2 := (*j.Results)[0].JobResultId, (*j.Results)[2].JobResultId
		for i, want := range []struct{ result, label string }{{r0, "Threat"}, {r0, "Spam"}, {r2, "Spam"}} {
			require.Equal(t, want.result, hits[i].JobResultID)
			require.Equal(t, want.label, hits[i].Label)
			require.Equal(t, domain.ModalityText, hits[i].Modality)
			require.Equal(t, int64(0), hits[i].StartMs)
			require.Nil(t, hits[i].EndMs)
			require.Equal(t, i, hits[i].Seq)
		}

		// A threshold above the score makes sections FALSE.
		j = env.submit(env.PolicyFirst.Token, client.CreateJobRequest{
			PolicyId: policyID, WaitForCompletion: ptr(true), Threshold: ptr(0.75), Expedited: ptr(true),
			ContentData: []client.ContentData{textItem("buy now", nil)},
		})
		require.Equal(t, 0.75, j.Threshold)
		require.True(t, j.Expedited)
		require.Equal(t, client.OUTCOMETRUE, (*j.Results)[0].Report.Result, "score 1 >= 0.75")

		// snake_case spellings are accepted.
		raw := env.call(http.MethodPost, "/v1/jobs", env.PolicyFirst.Token,
			`{"content_data":[{"text":"buy now"}],"policy_id":"`+policyID+`","wait_for_completion":true}`)
		require.Equal(t, http.StatusOK, raw.Status, "%s", raw.Body)
		require.Contains(t, string(raw.Body), `"JOB_STATUS_COMPLETED"`)
	})
}

func TestCreateJobAsync(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		var ids []string
		for i := range 5 {
			j := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{
				PolicyId: policyID, Expedited: ptr(i%2 == 0),
				ContentData: []client.ContentData{textItem(fmt.Sprintf("buy now %d", i), nil)},
				Webhook:     &client.Webhook{Url: "https://hooks.example.com/x", ExtraHeaders: &client.StringMap{"Team": "t"}},
			})
			require.Equal(t, client.JOBSTATUSPENDING, j.Status, "async by default")
			require.Nil(t, j.Results)
			require.Nil(t, j.Completed)
			ids = append(ids, j.JobUuid)
		}
		for _, id := range ids {
			j := env.waitForJob(env.PolicyFirst.Token, id)
			require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
			require.Len(t, *j.Results, 1)
			require.Equal(t, client.OUTCOMETRUE, (*j.Results)[0].Report.Result)
		}
		// The webhook is recorded for the delivery outbox.
		stored, err := persistence.NewJobs(env.Main.DB).GetJob(context.Background(), env.PolicyFirst.ID, ids[0])
		require.NoError(t, err)
		require.Equal(t, &domain.Webhook{URL: "https://hooks.example.com/x", ExtraHeaders: map[string]string{"Team": "t"}}, stored.Webhook)

		// Another account cannot see the job.
		other := env.newAccount("other", domain.AccountPolicyFirst)
		raw := env.call(http.MethodGet, "/v1/jobs/"+ids[0], other.Token, "")
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)
		raw = env.call(http.MethodGet, "/v1/jobs/does-not-exist", env.PolicyFirst.Token, "")
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)
		// Label-first accounts may read jobs (of their own account).
		raw = env.call(http.MethodGet, "/v1/jobs/"+ids[0], env.LabelFirst.Token, "")
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)
	})
}

func TestCreateJobErrors(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.JobMaxItems, c.JobMaxTextBytes = 3, 1024 }, func(t *testing.T, env *testEnv) {
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		disabled := env.createPolicy(env.PolicyFirst.Token, "off")
		_, err := env.Main.Policies.SetDisabled(context.Background(), env.PolicyFirst.ID, disabled, true)
		require.NoError(t, err)
		other := env.newAccount("other", domain.AccountPolicyFirst)
		otherPolicy := env.createPolicy(other.Token, "theirs")
		pf := env.PolicyFirst.Token
		job := func(content, extra string) string {
			return `{"policyId":"` + policyID + `","contentData":[` + content + `]` + extra + `}`
		}
		for _, tc := range []struct {
			name, token, body string
			status            int
			code              domain.Code
			field             string
		}{
			{"two content types", pf, job(`{"text":"a","imageUrl":"https://x/y.png"}`, ""), 400, domain.InvalidArgument, "contentData[0]"},
			{"no content type", pf, job(`{"text":"a"},{"metadata":{"a":"b"}}`, ""), 400, domain.InvalidArgument, "contentData[1]"},
			{"too many entries", pf, job(`{"text":"a"},{"text":"b"},{"text":"c"},{"text":"d"}`, ""), 400, domain.InvalidArgument, "contentData"},
			{"text too long", pf, job(`{"text":"`+strings.Repeat("x", 1025)+`"}`, ""), 400, domain.InvalidArgument, "contentData[0].text"},
			{"empty content", pf, job(``, ""), 400, domain.InvalidArgument, "contentData"},
			{"missing policy", pf, `{"contentData":[{"text":"a"}]}`, 400, domain.InvalidArgument, "policyId"},
			{"bad image url", pf, job(`{"imageUrl":"ftp://x/y"}`, ""), 400, domain.InvalidArgument, "contentData[0].imageUrl"},
			{"bad webhook", pf, job(`{"text":"a"}`, `,"webhook":{"url":"not a url"}`), 400, domain.InvalidArgument, "webhook.url"},
			{"bad threshold", pf, job(`{"text":"a"}`, `,"threshold":-1`), 400, domain.InvalidArgument, "threshold"},
			{"unknown policy", pf, `{"policyId":"nope","contentData":[{"text":"a"}]}`, 404, domain.NotFound, ""},
			{"other account's policy", pf, `{"policyId":"` + otherPolicy + `","contentData":[{"text":"a"}]}`, 404, domain.NotFound, ""},
			{"disabled policy", pf, `{"policyId":"` + disabled + `","contentData":[{"text":"a"}]}`, 400, domain.FailedPrecondition, ""},
			{"label-first account", env.LabelFirst.Token, job(`{"text":"a"}`, ""), 400, domain.FailedPrecondition, ""},
			{"no key", "", job(`{"text":"a"}`, ""), 401, domain.Unauthenticated, ""},
		} {
			for _, path := range []string{"/v1/jobs", "/v1/jobs/stream"} {
				if path == "/v1/jobs/stream" && strings.Contains(tc.body, "webhook") {
					continue // streams have no webhook; the field is ignored
				}
				t.Run(tc.name+" "+path, func(t *testing.T) {
					r := callT(t, env, http.MethodPost, path, tc.token, tc.body)
					m := requireStatus(t, r, tc.status, tc.code)
					if tc.field != "" {
						require.Contains(t, fieldViolations(t, m), tc.field)
					}
				})
			}
		}
		// No job was recorded by a refused request.
		r, err := env.Client(pf).ListJobsWithResponse(context.Background(), &client.ListJobsParams{})
		require.NoError(t, err)
		require.Empty(t, r.JSON200.Jobs)
	})
}

// Image entries are covered by images_test.go, video in media_jobs_test.go.
func TestUnreachableVideoURLFailsTheJob(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		j := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{
			PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{VideoUrl: ptr("https://example.invalid/v.mp4")}},
		})
		require.Equal(t, client.JOBSTATUSFAILED, j.Status)
		require.Equal(t, client.JOBERRORREASONVIDEOSOURCEUNREACHABLE, j.Error.Reason)
	})
}

func TestListJobs(t *testing.T) {
	// Role api: no queue workers, so asynchronous jobs stay pending.
	forEachBackend(t, func(c *Config) { c.Role = "api" }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		pf := env.PolicyFirst.Token
		c := env.Client(pf)
		p1 := env.createPolicy(pf, "one")
		p2 := env.createPolicy(pf, "two")
		t0 := env.Clock.Now()
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
		text := []client.ContentData{textItem("hi", nil)}
		env.Clock.Add(time.Minute) // A at t0+1m: completed, p1
		a := env.submit(pf, client.CreateJobRequest{PolicyId: p1, WaitForCompletion: ptr(true), ContentData: text})
		env.Clock.Add(time.Minute) // B at t0+2m: completed, p2
		b := env.submit(pf, client.CreateJobRequest{PolicyId: p2, WaitForCompletion: ptr(true), ContentData: text})
		env.Clock.Add(time.Minute) // C at t0+3m: pending, p1
		cj := env.submit(pf, client.CreateJobRequest{PolicyId: p1, ContentData: text})
		env.Clock.Add(time.Minute) // D at t0+4m: failed, p1
		d := env.submit(pf, client.CreateJobRequest{PolicyId: p1, Expedited: ptr(true), ContentData: text})
		// Fail D as a worker would (expedited: it is claimed before C).
		store := persistence.NewJobs(env.Main.DB)
		claimed, err := store.ClaimJobs(ctx, "test", env.Clock.Now(), env.Clock.Now().Add(time.Minute), 1, 0)
		require.NoError(t, err)
		require.Equal(t, d.JobUuid, claimed[0].ID)
		require.NoError(t, store.FinishJob(ctx, d.JobUuid, "test", domain.JobFailed, env.Clock.Now(), &domain.ErrJobInternal, nil, nil))
		// Another account's job never shows.
		other := env.newAccount("other", domain.AccountPolicyFirst)
		env.submit(other.Token, client.CreateJobRequest{PolicyId: env.createPolicy(other.Token, "x"), ContentData: text})

		ids := func(p client.ListJobsParams) []string {
			t.Helper()
			r, err := c.ListJobsWithResponse(ctx, &p)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			specChecked(t, r.HTTPResponse, r.Body)
			require.Nil(t, r.JSON200.NextPageToken)
			out := []string{}
			for _, j := range r.JSON200.Jobs {
				if j.Status != client.JOBSTATUSCOMPLETED {
					require.Nil(t, j.Results, "an incomplete job carries basic fields only")
				} else {
					// As GET /v1/jobs/{jobUuid} gives it, results included.
					require.NotNil(t, j.Results, "a complete job carries its results")
					require.Len(t, *j.Results, len(j.ContentData))
					got, err := c.GetJobWithResponse(ctx, j.JobUuid)
					require.NoError(t, err)
					require.Equal(t, got.JSON200.Job, j)
				}
				out = append(out, j.JobUuid)
			}
			return out
		}
		A, B, C, D := a.JobUuid, b.JobUuid, cj.JobUuid, d.JobUuid
		st := func(s client.JobStatus) *client.JobStatus { return &s }
		for _, tc := range []struct {
			name string
			p    client.ListJobsParams
			want []string
		}{
			{"all, newest first", client.ListJobsParams{}, []string{D, C, B, A}},
			{"status completed", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSCOMPLETED)}, []string{B, A}},
			{"status pending", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSPENDING)}, []string{C}},
			{"status failed", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSFAILED)}, []string{D}},
			{"status running", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSRUNNING)}, []string{}},
			{"status unspecified", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSUNSPECIFIED)}, []string{D, C, B, A}},
			{"policy", client.ListJobsParams{QueryPolicyId: &p2}, []string{B}},
			{"policy and status", client.ListJobsParams{QueryPolicyId: &p1, QueryStatus: st(client.JOBSTATUSCOMPLETED)}, []string{A}},
			{"created exclusive", client.ListJobsParams{QueryCreatedTimeRangeStart: ptr(at(2)), QueryCreatedTimeRangeEnd: ptr(at(4))}, []string{C}},
			{"created inclusive", client.ListJobsParams{QueryCreatedTimeRangeStart: ptr(at(2)), QueryCreatedTimeRangeEnd: ptr(at(4)), QueryCreatedTimeRangeInclusive: ptr(true)}, []string{D, C, B}},
			{"created open end", client.ListJobsParams{QueryCreatedTimeRangeStart: ptr(at(3))}, []string{D}},
			{"created open start", client.ListJobsParams{QueryCreatedTimeRangeEnd: ptr(at(2)), QueryCreatedTimeRangeInclusive: ptr(true)}, []string{B, A}},
			{"updated", client.ListJobsParams{QueryUpdatedTimeRangeStart: ptr(at(1)), QueryUpdatedTimeRangeEnd: ptr(at(3)), QueryUpdatedTimeRangeInclusive: ptr(true)}, []string{C, B, A}},
			{"completed", client.ListJobsParams{QueryCompletedTimeRangeStart: ptr(at(2)), QueryCompletedTimeRangeInclusive: ptr(true)}, []string{D, B}},
			{"completed excludes unfinished", client.ListJobsParams{QueryCompletedTimeRangeEnd: ptr(at(9))}, []string{D, B, A}},
			{"page size 0 is 10", client.ListJobsParams{PageSize: ptr(int32(0))}, []string{D, C, B, A}},
			{"page size 1000", client.ListJobsParams{PageSize: ptr(int32(1000))}, []string{D, C, B, A}},
			{"page size above the cap", client.ListJobsParams{PageSize: ptr(int32(5000))}, []string{D, C, B, A}},
		} {
			t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, ids(tc.p)) })
		}

		// Paging one at a time walks every job once, in order.
		var walked []string
		var token *string
		var tokens []string
		for {
			r, err := c.ListJobsWithResponse(ctx, &client.ListJobsParams{PageSize: ptr(int32(1)), PageToken: token})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			for _, j := range r.JSON200.Jobs {
				walked = append(walked, j.JobUuid)
			}
			token = r.JSON200.NextPageToken
			if token == nil {
				break
			}
			tokens = append(tokens, *token)
		}
		require.Equal(t, []string{D, C, B, A}, walked)
		require.Len(t, tokens, 3, "no token after the last page")
		// Exactly a page's worth: no token on the full last page.
		r, err := c.ListJobsWithResponse(ctx, &client.ListJobsParams{PageSize: ptr(int32(2)), PageToken: &tokens[1]})
		require.NoError(t, err)
		require.Len(t, r.JSON200.Jobs, 2)
		require.Nil(t, r.JSON200.NextPageToken)

		// Tokens are bound to the filters and the account.
		for _, tc := range []struct{ name, path, token string }{
			{"other filter", "/v1/jobs?pageSize=1&query.status=JOB_STATUS_PENDING&pageToken=" + tokens[0], pf},
			{"other policy filter", "/v1/jobs?pageSize=1&query.policyId=" + p1 + "&pageToken=" + tokens[0], pf},
			{"other range", "/v1/jobs?pageSize=1&query.createdTimeRange.inclusive=true&pageToken=" + tokens[0], pf},
			{"other account", "/v1/jobs?pageSize=1&pageToken=" + tokens[0], other.Token},
			{"garbage", "/v1/jobs?pageToken=abc.def", pf},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := callT(t, env, http.MethodGet, tc.path, tc.token, "")
				m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
				require.Contains(t, fieldViolations(t, m), "pageToken")
			})
		}
		// A different page size is not a different request.
		raw := env.call(http.MethodGet, "/v1/jobs?pageSize=3&pageToken="+tokens[0], pf, "")
		require.Equal(t, http.StatusOK, raw.Status, "%s", raw.Body)
		raw = env.call(http.MethodGet, "/v1/jobs?pageSize=-1", pf, "")
		m := requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "pageSize")

		// The default page size is 10.
		for range 8 {
			env.submit(pf, client.CreateJobRequest{PolicyId: p1, ContentData: text})
		}
		r, err = c.ListJobsWithResponse(ctx, &client.ListJobsParams{})
		require.NoError(t, err)
		require.Len(t, r.JSON200.Jobs, 10)
		require.NotNil(t, r.JSON200.NextPageToken)
		r, err = c.ListJobsWithResponse(ctx, &client.ListJobsParams{PageToken: r.JSON200.NextPageToken})
		require.NoError(t, err)
		require.Len(t, r.JSON200.Jobs, 2)
		require.Nil(t, r.JSON200.NextPageToken)
	})
}

// streamLines posts a stream request and returns the response with a reader
// of its lines.
func (e *testEnv) stream(token, body string) (*http.Response, *bufio.Reader) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/jobs/stream", strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := specClient.Do(req)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewReader(resp.Body)
}

func TestStreamJobs(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		doc, _ := loadSpec(t)
		lineSchema := doc.Components.Schemas["StreamJobsMessage"].Value
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		texts := []string{"buy now", "nothing here", "i will kill you"}
		body, err := json.Marshal(map[string]any{
			"policyId": policyID, "threshold": 0.5,
			"contentData": []map[string]any{
				{"text": texts[0], "metadata": map[string]string{"k": "0"}}, {"text": texts[1]},
				{"image": []byte("not an image")}, {"text": texts[2]},
			},
		})
		require.NoError(t, err)
		resp, rd := env.stream(env.PolicyFirst.Token, string(body))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))

		// Read line by line as the lines arrive.
		var jobID string
		var lines []map[string]any
		for {
			line, err := rd.ReadBytes('\n')
			if len(line) == 0 && err != nil {
				break
			}
			require.True(t, bytes.HasSuffix(line, []byte("\n")), "every line ends with a newline: %q", line)
			var v any
			require.NoError(t, json.Unmarshal(line, &v), "line %q", line)
			require.NoError(t, lineSchema.VisitJSON(v), "line %s", line)
			lines = append(lines, v.(map[string]any))
		}
		require.Len(t, lines, 4, "one line per entry")
		textIdx := 0
		for i, l := range lines {
			if i == 2 {
				// Not an image: a precheck failure line (code 1).
				e := l["error"].(map[string]any)
				require.EqualValues(t, domain.Canceled, e["code"])
				require.Equal(t, string(domain.PrecheckFailureInvalidImage), e["details"].([]any)[0].(map[string]any)["type"])
				require.NotContains(t, l, "result")
				continue
			}
			res := l["result"].(map[string]any)
			require.NotContains(t, l, "error")
			require.Equal(t, sha(texts[textIdx]), res["contentHash"])
			require.NotEmpty(t, res["jobResultId"])
			if jobID == "" {
				jobID = res["jobUuid"].(string)
			}
			require.Equal(t, jobID, res["jobUuid"])
			rep := res["policyEvaluationReport"].(map[string]any)
			require.Equal(t, policyID, rep["policyId"])
			textIdx++
		}
		require.Equal(t, "OUTCOME_TRUE", lines[0]["result"].(map[string]any)["policyEvaluationReport"].(map[string]any)["result"])
		require.Equal(t, "OUTCOME_FALSE", lines[1]["result"].(map[string]any)["policyEvaluationReport"].(map[string]any)["result"])

		// The job is recorded; the image entry failed it.
		j := env.waitForJob(env.PolicyFirst.Token, jobID)
		require.Equal(t, client.JOBSTATUSFAILED, j.Status)
		require.Equal(t, client.JOBERRORREASONCONTENTPRECHECKFAILED, j.Error.Reason)
		require.Equal(t, client.JOBTYPESTANDARD, j.JobType)

		// A text-only stream completes, with its results. Read as the spec
		// tells a Go client to: StreamJobs (the raw response) and a
		// scanner, each line a StreamJobsMessage.
		sresp, err := env.Client(env.PolicyFirst.Token).StreamJobs(context.Background(), client.StreamJobsRequest{
			PolicyId: policyID, ContentData: []client.ContentData{textItem("buy now", nil), textItem("x", nil)},
		})
		require.NoError(t, err)
		defer sresp.Body.Close()
		require.Equal(t, http.StatusOK, sresp.StatusCode)
		var msgs []client.StreamJobsMessage
		for sc := bufio.NewScanner(sresp.Body); sc.Scan(); {
			var m client.StreamJobsMessage
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
			msgs = append(msgs, m)
		}
		require.Len(t, msgs, 2)
		require.NotNil(t, msgs[0].Result)
		j = env.waitForJob(env.PolicyFirst.Token, msgs[0].Result.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		require.Len(t, *j.Results, 2)
	})
}

// TestStreamDisconnectCancels closes the connection after the first line:
// the remaining entries are not evaluated and the job is recorded canceled.
func TestStreamDisconnectCancels(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.JobMaxItems = 1000 }, func(t *testing.T, env *testEnv) {
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		// Enough work that the stream cannot finish before the server sees
		// the client go away, small enough to validate quickly.
		entries := make([]map[string]string, 1000)
		big := strings.Repeat("lorem ipsum dolor sit amet buy now ", 240) // ~8 KiB each
		for i := range entries {
			entries[i] = map[string]string{"text": big}
		}
		body, err := json.Marshal(map[string]any{"policyId": policyID, "contentData": entries})
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, env.URL+"/v1/jobs/stream", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+env.PolicyFirst.Token)
		req.Header.Set("Content-Type", "application/json")
		// A transport of its own, so closing the body really closes the
		// connection.
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: contractTransport{base: tr}}).Do(req)
		require.NoError(t, err)
		rd := bufio.NewReader(resp.Body)
		line, err := rd.ReadBytes('\n')
		require.NoError(t, err)
		var first struct {
			Result struct {
				JobUuid string `json:"jobUuid"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(line, &first))
		require.NoError(t, resp.Body.Close())

		j := env.waitForJob(env.PolicyFirst.Token, first.Result.JobUuid)
		require.Equal(t, client.JOBSTATUSCANCELED, j.Status)
		require.Nil(t, j.Results)
	})
}
