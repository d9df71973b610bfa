package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

// batchConfig makes batch tests fast: short polls, webhooks to loopback.
func batchConfig(c *Config) {
	c.AllowPrivateURLs = true
	c.WebhookPoll = 20 * time.Millisecond
	c.JobPollInterval = 20 * time.Millisecond
}

// createBatch posts a batch job and returns the response.
func (e *testEnv) createBatch(t *testing.T, token string, req client.CreateBatchJobRequest) client.CreateBatchJobResponse {
	t.Helper()
	r, err := e.Client(token).CreateBatchJobWithResponse(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	specChecked(t, r.HTTPResponse, r.Body)
	return *r.JSON200
}

// putFile uploads body to a signed URL with plain HTTP, as a client would.
func putFile(t *testing.T, url, body string) rawResponse {
	t.Helper()
	return putFileAs(t, url, body, "application/octet-stream")
}

// putFileAs uploads body with contentType ("" sends no Content-Type, as
// curl -T does).
func putFileAs(t *testing.T, url, body, contentType string) rawResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := specClient.Do(req)
	require.NoError(t, err)
	req.Body = nil
	return readResponse(t, req, resp)
}

func getFile(t *testing.T, url string) rawResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := specClient.Do(req)
	require.NoError(t, err)
	return readResponse(t, req, resp)
}

// getBatch lists one batch job by id.
func (e *testEnv) getBatch(t *testing.T, token, id string) client.BatchJob {
	t.Helper()
	r, err := e.Client(token).ListBatchJobsWithResponse(context.Background(), &client.ListBatchJobsParams{BatchJobIds: &[]string{id}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	specChecked(t, r.HTTPResponse, r.Body)
	require.Len(t, r.JSON200.BatchJobs, 1)
	return r.JSON200.BatchJobs[0]
}

// waitForBatch polls until the batch is terminal.
func (e *testEnv) waitForBatch(t *testing.T, token, id string) client.BatchJob {
	t.Helper()
	var b client.BatchJob
	testwait.For(t, 60*time.Second, "batch "+id+" to end", func() (bool, error) {
		b = e.getBatch(t, token, id)
		switch b.State {
		case client.BATCHJOBSTATECOMPLETED, client.BATCHJOBSTATEERROR, client.BATCHJOBSTATECANCELLED:
			return true, nil
		}
		return false, fmt.Errorf("still %s", b.State)
	})
	return b
}

type outputLine struct {
	RefID       string                   `json:"refId"`
	JobUUID     string                   `json:"jobUuid"`
	ContentHash string                   `json:"contentHash"`
	Status      string                   `json:"status"`
	Result      string                   `json:"result"`
	Report      *client.EvaluationReport `json:"report"`
	Error       *client.JobError         `json:"error"`
}

func readOutput(t *testing.T, body []byte) []outputLine {
	t.Helper()
	var out []outputLine
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l outputLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "line %q", sc.Text())
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestBatchLifecycle(t *testing.T) {
	forEachBackend(t, batchConfig, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		acct, err := env.Main.Accounts.GetAccount(ctx, env.PolicyFirst.ID)
		require.NoError(t, err)
		srv, received := webhookReceiver(t, acct.WebhookSecret)
		policyID := env.createPolicy(tok, "batch")

		inputs := map[string]string{
			"csv": "ref_id,type,content\n" +
				"r1,text,i will kill you\n" +
				"r2,text,\"hello, friend\"\n" +
				"r3,image_url,http://127.0.0.1:1/cat.png\n" +
				"r4,text,buy now\n",
			"jsonl": `{"refId":"r1","contentData":{"text":"i will kill you"}}` + "\n" +
				`{"refId":"r2","contentData":{"text":"hello, friend","metadata":{"k":"v"}}}` + "\n" +
				`{"refId":"r3","contentData":{"imageUrl":"http://127.0.0.1:1/cat.png"}}` + "\n" +
				`{"ref_id":"r4","content_data":{"text":"buy now"}}` + "\n",
		}
		ids := map[string]string{}
		for _, format := range []string{"csv", "jsonl"} {
			created := env.createBatch(t, tok, client.CreateBatchJobRequest{
				Name: ptr("nightly " + format), PolicyId: policyID, WebhookUrl: ptr(srv.URL + "/batch"),
			})
			require.Nil(t, created.Error)
			require.Equal(t, "nightly "+format, created.Name)
			require.NotNil(t, created.InputFileUploadUrl)
			require.True(t, strings.HasPrefix(*created.InputFileUploadUrl, env.URL+"/v1/batch-jobs/"+created.BatchJobId+"/input?"))
			ids[format] = created.BatchJobId
			b := env.getBatch(t, tok, created.BatchJobId)
			if b.State != client.BATCHJOBSTATEINITIALIZED {
				t.Fatalf("a new batch is %s", b.State)
			}
			require.Nil(t, b.OutputFileUrl)

			// No bearer token: the signature is the credential.
			r := putFile(t, *created.InputFileUploadUrl, inputs[format])
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			requireMatchesSpec(t, r)
			var up client.UploadBatchInputResponse
			require.NoError(t, json.Unmarshal(r.Body, &up))
			require.Equal(t, created.BatchJobId, up.BatchJob.BatchJobId)
		}

		for _, format := range []string{"csv", "jsonl"} {
			b := env.waitForBatch(t, tok, ids[format])
			require.Equal(t, client.BATCHJOBSTATECOMPLETED, b.State, "%+v", b.Error)
			require.EqualValues(t, 4, b.ItemCount)
			require.EqualValues(t, 4, b.ProcessedCount)
			require.EqualValues(t, 1, b.FailedCount, "the image item fails: its URL cannot be fetched")
			require.Equal(t, policyID, b.PolicyId)
			require.NotEmpty(t, b.PolicyVersionId)
			require.NotNil(t, b.OutputFileUrl)

			// The input file is deleted once the batch is done.
			stored, err := persistence.NewBatchJobs(env.Main.DB).GetBatchByID(ctx, ids[format])
			require.NoError(t, err)
			_, err = env.Main.Blobs.Stat(ctx, stored.InputKey)
			require.Equal(t, domain.NotFound, domain.ErrorCode(err))

			r := getFile(t, *b.OutputFileUrl)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			require.Equal(t, "application/x-ndjson", r.Header.Get("Content-Type"))
			requireBatchOutput(t, env, tok, policyID, format, r.Body)

			// The signed URLs refuse anything altered.
			requireSignedURLsRefuseChanges(t, *b.OutputFileUrl, ids[format], ids[map[string]string{"csv": "jsonl", "jsonl": "csv"}[format]])
		}

		// One webhook per batch, signed (the receiver verifies), in the
		// API's BatchJob shape.
		requireBatchWebhooks(t, received)

		requireBatchListing(t, env, tok, ids)

		// After the URL's 4 hours, the download URL is refused.
		b := env.getBatch(t, tok, ids["csv"])
		env.Clock.Add(4*time.Hour + time.Second)
		requireStatus(t, getFile(t, *b.OutputFileUrl), http.StatusForbidden, domain.PermissionDenied)
	})
}

// requireBatchOutput checks the output file of the lifecycle's batch of
// the given format: a line per item, in order, with its job.
func requireBatchOutput(t *testing.T, env *testEnv, tok, policyID, format string, body []byte) {
	t.Helper()
	ctx := context.Background()
	lines := readOutput(t, body)
	require.Len(t, lines, 4)
	require.Equal(t, []string{"r1", "r2", "r3", "r4"}, []string{lines[0].RefID, lines[1].RefID, lines[2].RefID, lines[3].RefID})
	require.Equal(t, sha("i will kill you"), lines[0].ContentHash)
	require.Equal(t, "JOB_STATUS_COMPLETED", lines[0].Status)
	require.Equal(t, "OUTCOME_TRUE", lines[0].Result)
	require.Equal(t, "OUTCOME_FALSE", lines[1].Result)
	require.Equal(t, "OUTCOME_TRUE", lines[3].Result)
	require.NotNil(t, lines[0].Report)
	require.Equal(t, policyID, lines[0].Report.PolicyId)
	require.Equal(t, "JOB_STATUS_FAILED", lines[2].Status)
	require.NotNil(t, lines[2].Error)
	require.Nil(t, lines[2].Report)
	// Runs of text items share a job; other kinds get their own.
	require.Equal(t, lines[0].JobUUID, lines[1].JobUUID)
	require.NotEqual(t, lines[1].JobUUID, lines[2].JobUUID)
	require.NotEqual(t, lines[2].JobUUID, lines[3].JobUUID)
	require.NotEqual(t, lines[0].JobUUID, lines[3].JobUUID)
	for _, l := range lines {
		require.NotEmpty(t, l.JobUUID)
		// Each item is a JOB_TYPE_BATCH job of the account.
		jr, err := env.Client(tok).GetJobWithResponse(ctx, l.JobUUID)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, jr.StatusCode())
		require.Equal(t, client.JOBTYPEBATCH, jr.JSON200.Job.JobType)
	}
	if format == "jsonl" {
		require.Equal(t, map[string]string{"k": "v"}, map[string]string(*lines[1].Report.ContentMetadata))
	}
}

// requireBatchWebhooks checks the two batches' webhooks: one per batch,
// batch_job.completed, in the API's BatchJob shape.
func requireBatchWebhooks(t *testing.T, received func() []receivedWebhook) {
	t.Helper()
	got := waitForWebhooks(t, received, 2)
	doc, _ := loadSpec(t)
	for _, w := range got {
		var p struct {
			Type     string          `json:"type"`
			BatchJob client.BatchJob `json:"batchJob"`
		}
		require.NoError(t, json.Unmarshal(w.body, &p))
		require.Equal(t, "batch_job.completed", p.Type)
		require.Equal(t, client.BATCHJOBSTATECOMPLETED, p.BatchJob.State)
		require.NotNil(t, p.BatchJob.OutputFileUrl)
		var raw map[string]any
		require.NoError(t, json.Unmarshal(w.body, &raw))
		require.NoError(t, doc.Components.Schemas["BatchJob"].Value.VisitJSON(raw["batchJob"]))
	}

}

// requireBatchListing checks the listing of the two completed batches ids:
// its filters, a cancel that changes nothing, and another account that sees
// none of them.
func requireBatchListing(t *testing.T, env *testEnv, tok string, ids map[string]string) {
	t.Helper()
	ctx := context.Background()
	// Filters: repeated ids and states.
	r, err := env.Client(tok).ListBatchJobsWithResponse(ctx, &client.ListBatchJobsParams{
		States: &[]client.BatchJobState{client.BATCHJOBSTATEERROR, client.BATCHJOBSTATECOMPLETED},
	})
	require.NoError(t, err)
	require.Len(t, r.JSON200.BatchJobs, 2)
	raw := env.call(http.MethodGet, "/v1/batch-jobs?states=BATCH_JOB_STATE_INITIALIZED", tok, "")
	require.Equal(t, http.StatusOK, raw.Status)
	require.JSONEq(t, `{"batchJobs":[]}`, string(raw.Body))
	raw = env.call(http.MethodGet, "/v1/batch-jobs?batchJobIds="+ids["csv"]+"&batchJobIds="+ids["jsonl"]+"&batchJobIds=nope", tok, "")
	require.Equal(t, http.StatusOK, raw.Status)
	var listed client.ListBatchJobsResponse
	require.NoError(t, json.Unmarshal(raw.Body, &listed))
	require.Len(t, listed.BatchJobs, 2)
	require.Equal(t, ids["jsonl"], listed.BatchJobs[0].BatchJobId, "newest first")

	// Cancelling a terminal batch changes nothing.
	cr, err := env.Client(tok).CancelBatchJobWithResponse(ctx, ids["csv"], client.CancelBatchJobRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cr.StatusCode(), "%s", cr.Body)
	specChecked(t, cr.HTTPResponse, cr.Body)
	require.Equal(t, client.BATCHJOBSTATECOMPLETED, cr.JSON200.State)

	// Another account sees nothing of them.
	other := env.newAccount("other", domain.AccountPolicyFirst)
	r, err = env.Client(other.Token).ListBatchJobsWithResponse(ctx, &client.ListBatchJobsParams{BatchJobIds: &[]string{ids["csv"]}})
	require.NoError(t, err)
	require.Empty(t, r.JSON200.BatchJobs)
	requireStatus(t, env.call(http.MethodPost, "/v1/batch-jobs/"+ids["csv"]+"/cancel", other.Token, "{}"), http.StatusNotFound, domain.NotFound)

}

// requireSignedURLsRefuseChanges checks that the output URL of batch id
// refuses every alteration: of its signature, its batch (otherID), its
// expiry, and its use for an upload.
func requireSignedURLsRefuseChanges(t *testing.T, url, id, otherID string) {
	t.Helper()
	tampered := strings.Replace(url, "signature=", "signature=A", 1)
	requireStatus(t, getFile(t, tampered), http.StatusForbidden, domain.PermissionDenied)
	otherBatch := strings.Replace(url, id, otherID, 1)
	requireStatus(t, getFile(t, otherBatch), http.StatusForbidden, domain.PermissionDenied)
	longer := strings.Replace(url, "expires=", "expires=9", 1)
	requireStatus(t, getFile(t, longer), http.StatusForbidden, domain.PermissionDenied)
	// Uploading after completion is refused.
	requireStatus(t, putFile(t, strings.Replace(url, "/output?", "/input?", 1), "x"), http.StatusForbidden, domain.PermissionDenied)
}

func TestBatchCreateErrors(t *testing.T) {
	forEachBackend(t, batchConfig, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		// An unknown policy is reported in the response's error, as the contract says,
		// with the batch recorded as ERROR and no upload URL.
		created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: "no-such-policy"})
		require.NotNil(t, created.Error)
		require.Equal(t, client.BATCHJOBERRORINVALIDPOLICY, created.Error.ErrorCode)
		require.Contains(t, created.Error.ErrorMessage, "no-such-policy")
		require.Nil(t, created.InputFileUploadUrl)
		b := env.getBatch(t, tok, created.BatchJobId)
		require.Equal(t, client.BATCHJOBSTATEERROR, b.State)

		// Label-first accounts cannot use batch jobs.
		requireStatus(t, env.call(http.MethodPost, "/v1/batch-jobs", env.LabelFirst.Token, `{"policyId":"p"}`), http.StatusBadRequest, domain.FailedPrecondition)
		requireStatus(t, env.call(http.MethodGet, "/v1/batch-jobs", env.LabelFirst.Token, ""), http.StatusBadRequest, domain.FailedPrecondition)
		requireStatus(t, env.call(http.MethodPost, "/v1/batch-jobs", "", `{"policyId":"p"}`), http.StatusUnauthorized, domain.Unauthenticated)
		// Bad webhook URL, missing policy id, unknown state filter.
		policyID := env.createPolicy(tok, "errors")
		m := requireStatus(t, env.call(http.MethodPost, "/v1/batch-jobs", tok, `{"policyId":"`+policyID+`","webhookUrl":"ftp://x"}`), http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "webhookUrl")
		requireStatus(t, env.call(http.MethodPost, "/v1/batch-jobs", tok, `{}`), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodGet, "/v1/batch-jobs?states=BOGUS", tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodPost, "/v1/batch-jobs/nope/cancel", tok, "{}"), http.StatusNotFound, domain.NotFound)
		// Signed endpoints without or with a made-up signature.
		requireStatus(t, putFile(t, env.URL+"/v1/batch-jobs/"+created.BatchJobId+"/input?expires=9999999999&signature=AAAA", "x"), http.StatusForbidden, domain.PermissionDenied)
		r := putFile(t, env.URL+"/v1/batch-jobs/"+created.BatchJobId+"/input", "x")
		require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
	})
}
