package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
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
	return e.waitForJobWithin(token, id, 90*time.Second) // generous: -race on a busy 2-core machine
}

// waitForJobWithin is waitForJob for jobs meant to be long (many costly
// items), whose end may take minutes under -race on a loaded machine.
func (e *testEnv) waitForJobWithin(token, id string, within time.Duration) client.Job {
	e.t.Helper()
	var j client.Job
	testwait.For(e.t, within, "job "+id+" to end", func() (bool, error) {
		r, err := e.Client(token).GetJobWithResponse(context.Background(), id)
		require.NoError(e.t, err)
		require.Equal(e.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		j = r.JSON200.Job
		switch j.Status {
		case client.JOBSTATUSCOMPLETED, client.JOBSTATUSFAILED, client.JOBSTATUSCANCELED:
			specChecked(e.t, r.HTTPResponse, r.Body)
			return true, nil
		}
		require.Nil(e.t, j.Results, "an unfinished job carries no results")
		return false, fmt.Errorf("still %s", j.Status)
	})
	return j
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
