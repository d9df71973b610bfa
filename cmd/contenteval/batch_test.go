package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/blobstore"
	"github.com/contenteval/contenteval/blobstore/blobstoretest"
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
	deadline := time.Now().Add(60 * time.Second)
	for {
		b := e.getBatch(t, token, id)
		switch b.State {
		case client.BATCHJOBSTATECOMPLETED, client.BATCHJOBSTATEERROR, client.BATCHJOBSTATECANCELLED:
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s still %s", id, b.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
			lines := readOutput(t, r.Body)
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

			// The signed URLs refuse anything altered.
			tampered := strings.Replace(*b.OutputFileUrl, "signature=", "signature=A", 1)
			requireStatus(t, getFile(t, tampered), http.StatusForbidden, domain.PermissionDenied)
			otherBatch := strings.Replace(*b.OutputFileUrl, ids[format], ids[map[string]string{"csv": "jsonl", "jsonl": "csv"}[format]], 1)
			requireStatus(t, getFile(t, otherBatch), http.StatusForbidden, domain.PermissionDenied)
			longer := strings.Replace(*b.OutputFileUrl, "expires=", "expires=9", 1)
			requireStatus(t, getFile(t, longer), http.StatusForbidden, domain.PermissionDenied)
			// Uploading after completion is refused.
			requireStatus(t, putFile(t, strings.Replace(*b.OutputFileUrl, "/output?", "/input?", 1), "x"), http.StatusForbidden, domain.PermissionDenied)
		}

		// One webhook per batch, signed (the receiver verifies), in the
		// API's BatchJob shape.
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

		// After the URL's 4 hours, the download URL is refused.
		b := env.getBatch(t, tok, ids["csv"])
		env.Clock.Add(4*time.Hour + time.Second)
		requireStatus(t, getFile(t, *b.OutputFileUrl), http.StatusForbidden, domain.PermissionDenied)
	})
}

func TestBatchCreateErrors(t *testing.T) {
	forEachBackend(t, batchConfig, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		// An unknown policy is reported in the response's error (SPEC.md),
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

// Every kind of invalid file ends the batch in ERROR with
// BATCH_JOB_ERROR_INVALID_INPUT_FILE and a message naming the bad lines, and
// a batch_job.failed webhook.
func TestBatchInvalidFiles(t *testing.T) {
	forEachBackend(t, func(c *Config) { batchConfig(c); c.BatchMaxItems = 3 }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		acct, err := env.Main.Accounts.GetAccount(ctx, env.PolicyFirst.ID)
		require.NoError(t, err)
		srv, received := webhookReceiver(t, acct.WebhookSecret)
		policyID := env.createPolicy(tok, "invalid")
		cases := []struct{ name, file, want string }{
			{"blank", "\n\n", "the file has no items"},
			{"header only", "ref_id,type,content\n", "the file has no items"},
			{"bad header", "id,kind,body\na,text,x\n", "line 1: the header must be ref_id,type,content"},
			{"field count", "ref_id,type,content\na,text\n", "line 2: want 3 fields"},
			{"unknown type", "ref_id,type,content\na,text,x\nb,pdf,y\n", `line 3: unknown type "pdf"`},
			{"empty ref", "ref_id,type,content\n,text,x\n", "line 2: ref_id is empty"},
			{"duplicate ref csv", "ref_id,type,content\na,text,x\na,text,y\n", `line 3: duplicate ref_id "a" (first on line 2)`},
			{"bad base64", "ref_id,type,content\na,image,%%%\n", "line 2: content of type image is not valid base64"},
			{"bad url", "ref_id,type,content\na,video_url,file:///etc/passwd\n", "line 2: content.videoUrl: must be an http or https URL"},
			{"bad quoting", "ref_id,type,content\na,text,\"x\"y\n", "line 2: malformed CSV quoting"},
			{"too many items", "ref_id,type,content\na,text,x\nb,text,x\nc,text,x\nd,text,x\n", "line 5: the file has more than 3 items"},
			{"not json", `{"refId":"a","contentData":{"text":"x"}}` + "\n{nope\n", "line 2: not a JSON object"},
			{"no refId", `{"contentData":{"text":"x"}}` + "\n", "line 1: refId is missing"},
			{"no contentData", `{"refId":"a"}` + "\n", "line 1: contentData is missing"},
			{"two contents", `{"refId":"a","contentData":{"text":"x","audioUrl":"https://e.com/a.mp3"}}` + "\n", "line 1: content: must carry exactly one of"},
			{"duplicate ref jsonl", `{"refId":"a","contentData":{"text":"x"}}` + "\n" + `{"refId":"a","contentData":{"text":"y"}}` + "\n", `line 2: duplicate ref_id "a" (first on line 1)`},
			// PostgreSQL cannot store NUL in a text column: refused as
			// any bad ref id is, not an error of the store or a stuck batch.
			{"NUL ref csv", "ref_id,type,content\na\x00b,text,x\n", "line 2: ref_id contains a NUL character"},
			{"NUL ref jsonl", `{"refId":"a\u0000","contentData":{"text":"x"}}` + "\n", "line 1: ref_id contains a NUL character"},
			{"NUL metadata jsonl", `{"refId":"a","contentData":{"text":"x","metadata":{"k":"\u0000"}}}` + "\n", "line 1: content.metadata.k: contains a NUL character"},
			{"several bad lines", "ref_id,type,content\n,text,x\na,bogus,x\nb,text,x\n,text,y\n", "line 2: ref_id is empty; line 3: unknown type"},
		}
		ids := map[string]string{}
		for _, c := range cases {
			created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID, Name: ptr(c.name), WebhookUrl: ptr(srv.URL)})
			r := putFile(t, *created.InputFileUploadUrl, c.file)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", c.name, r.Body)
			ids[c.name] = created.BatchJobId
		}
		for _, c := range cases {
			b := env.waitForBatch(t, tok, ids[c.name])
			require.Equal(t, client.BATCHJOBSTATEERROR, b.State, c.name)
			require.NotNil(t, b.Error, c.name)
			require.Equal(t, client.BATCHJOBERRORINVALIDINPUTFILE, b.Error.ErrorCode, c.name)
			require.Contains(t, b.Error.ErrorMessage, c.want, c.name)
			require.Nil(t, b.OutputFileUrl)
			require.EqualValues(t, 0, b.ItemCount, c.name)
		}
		// An empty body is refused at upload (the request body is required).
		created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID})
		requireStatus(t, putFile(t, *created.InputFileUploadUrl, ""), http.StatusBadRequest, domain.InvalidArgument)

		got := waitForWebhooks(t, received, len(cases))
		for _, w := range got {
			require.Contains(t, string(w.body), `"type":"batch_job.failed"`)
			require.Contains(t, string(w.body), "BATCH_JOB_ERROR_INVALID_INPUT_FILE")
		}
		// No jobs were created for invalid files.
		jr, err := env.Client(tok).ListJobsWithResponse(ctx, &client.ListJobsParams{})
		require.NoError(t, err)
		require.Empty(t, jr.JSON200.Jobs)
	})
}

// Cancel at each stage, with the workers stopped (role api) so the batch
// waits in the state the test puts it in; the states a worker reaches are
// set with the store's own guarded transitions.
func TestBatchCancelAtEachStage(t *testing.T) {
	forEachBackend(t, func(c *Config) { batchConfig(c); c.Role = "api" }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		acct, err := env.Main.Accounts.GetAccount(ctx, env.PolicyFirst.ID)
		require.NoError(t, err)
		// Role api runs no deliverer: the test checks the outbox.
		srv, _ := webhookReceiver(t, acct.WebhookSecret)
		store := persistence.NewBatchJobs(env.Main.DB)
		policyID := env.createPolicy(tok, "cancel")
		chain := []domain.BatchState{domain.BatchInitialized, domain.BatchQueued, domain.BatchPreprocessing, domain.BatchPreprocessed,
			domain.BatchSubmitted, domain.BatchEvaluating, domain.BatchPostprocessing, domain.BatchPostprocessed}
		for i, stage := range chain {
			t.Run(string(stage), func(t *testing.T) {
				created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID, WebhookUrl: ptr(srv.URL)})
				id := created.BatchJobId
				if i >= 1 {
					r := putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\na,text,x\n")
					require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				}
				for k := 1; k < i; k++ {
					_, err := store.TransitionBatch(ctx, domain.BatchTransition{ID: id, From: chain[k], To: chain[k+1], Now: env.Clock.Now()})
					require.NoError(t, err)
				}
				require.Equal(t, "BATCH_JOB_STATE_"+strings.ToUpper(string(stage)), string(env.getBatch(t, tok, id).State))
				if i >= 2 {
					// Processing started: the file can no longer be replaced.
					requireStatus(t, putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\nb,text,y\n"), http.StatusBadRequest, domain.FailedPrecondition)
				}
				for range 2 { // idempotent
					r, err := env.Client(tok).CancelBatchJobWithResponse(ctx, id, client.CancelBatchJobRequest{})
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
					specChecked(t, r.HTTPResponse, r.Body)
					require.Equal(t, client.BATCHJOBSTATECANCELLED, r.JSON200.State)
					require.Equal(t, id, r.JSON200.BatchJobId)
				}
				b := env.getBatch(t, tok, id)
				require.Equal(t, client.BATCHJOBSTATECANCELLED, b.State)
				// Cancelled batches take no more files.
				requireStatus(t, putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\nb,text,y\n"), http.StatusBadRequest, domain.FailedPrecondition)
				// Exactly one batch_job.cancelled event is in the outbox.
				var n int
				require.NoError(t, env.Main.DB.GetContext(ctx, &n, env.Main.DB.Rebind(
					`SELECT COUNT(*) FROM webhook_events WHERE subject_id = ? AND type = 'batch_job.cancelled'`), id))
				require.Equal(t, 1, n)
			})
		}
	})
}

// Re-uploading before processing starts replaces the file (workers stopped
// so processing cannot start in between).
func TestBatchReupload(t *testing.T) {
	forEachBackend(t, func(c *Config) { batchConfig(c); c.Role = "api" }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		policyID := env.createPolicy(tok, "reupload")
		created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID})
		for _, body := range []string{"ref_id,type,content\nfirst,text,x\n", "ref_id,type,content\nsecond,text,y\n"} {
			r := putFile(t, *created.InputFileUploadUrl, body)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			var up client.UploadBatchInputResponse
			require.NoError(t, json.Unmarshal(r.Body, &up))
			require.Equal(t, client.BATCHJOBSTATEQUEUED, up.BatchJob.State)
		}
		b, err := persistence.NewBatchJobs(env.Main.DB).GetBatchByID(ctx, created.BatchJobId)
		require.NoError(t, err)
		rc, err := env.Main.Blobs.Open(ctx, b.InputKey)
		require.NoError(t, err)
		got, _ := io.ReadAll(rc)
		rc.Close()
		require.Equal(t, "ref_id,type,content\nsecond,text,y\n", string(got))
	})
}

// With the S3 store the upload and download URLs are the store's own
// presigned URLs: the client moves files to and from a real S3 server
// (versitygw on loopback) and the worker notices the upload by itself.
func TestBatchWithS3Store(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an S3 gateway")
	}
	endpoint := blobstoretest.StartVersityGW(t)
	forEachBackend(t, func(c *Config) {
		batchConfig(c)
		c.BlobStore = "s3"
		c.S3 = blobstore.S3Config{Endpoint: endpoint, Region: "us-east-1", Bucket: "batches", AccessKey: blobstoretest.AccessKey,
			SecretKey: blobstoretest.SecretKey, Prefix: "t-" + filepath.Base(c.DataDir) + "/", PathStyle: true, TempDir: c.DataDir}
	}, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		policyID := env.createPolicy(tok, "s3")
		created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID})
		require.True(t, strings.HasPrefix(*created.InputFileUploadUrl, endpoint+"/batches/"), *created.InputFileUploadUrl)
		require.Contains(t, *created.InputFileUploadUrl, "X-Amz-Signature=")
		r := putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\na,text,buy now\nb,text,hello\n")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

		b := env.waitForBatch(t, tok, created.BatchJobId)
		require.Equal(t, client.BATCHJOBSTATECOMPLETED, b.State, "%+v", b.Error)
		require.True(t, strings.HasPrefix(*b.OutputFileUrl, endpoint+"/batches/"), *b.OutputFileUrl)
		out := getFile(t, *b.OutputFileUrl)
		require.Equal(t, http.StatusOK, out.Status, "%s", out.Body)
		lines := readOutput(t, out.Body)
		require.Len(t, lines, 2)
		require.Equal(t, "a", lines[0].RefID)
		require.Equal(t, "OUTCOME_TRUE", lines[0].Result)
		require.Equal(t, "OUTCOME_FALSE", lines[1].Result)

		// An upload after processing started does not change the batch.
		r = putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\nz,text,other\n")
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, client.BATCHJOBSTATECOMPLETED, env.getBatch(t, tok, created.BatchJobId).State)
	})
}

// uploadContentTypes are the uploads a client makes of a batch file: with
// no type (curl -T), the file's own type, or a generic one.
var uploadContentTypes = []struct{ contentType, file string }{
	{"", "ref_id,type,content\na,text,buy now\n"},
	{"text/csv", "ref_id,type,content\na,text,buy now\n"},
	{"text/csv; charset=utf-8", "ref_id,type,content\na,text,buy now\n"},
	{"application/x-ndjson", `{"refId":"a","contentData":{"text":"buy now"}}` + "\n"},
	{"application/octet-stream", "ref_id,type,content\na,text,buy now\n"},
	{"text/plain", `{"refId":"a","contentData":{"text":"buy now"}}` + "\n"},
}

// Any upload starts the batch, on the API's own endpoint (local store) and
// on presigned S3 URLs: the file's format is told by its content.
func TestBatchUploadAnyContentType(t *testing.T) {
	stores := map[string]func(*Config){"local": func(*Config) {}}
	if !testing.Short() {
		endpoint := blobstoretest.StartVersityGW(t)
		stores["s3"] = func(c *Config) {
			c.BlobStore = "s3"
			c.S3 = blobstore.S3Config{Endpoint: endpoint, Region: "us-east-1", Bucket: "batches", AccessKey: blobstoretest.AccessKey,
				SecretKey: blobstoretest.SecretKey, Prefix: "t-" + filepath.Base(c.DataDir) + "/", PathStyle: true, TempDir: c.DataDir}
		}
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			forEachBackend(t, func(c *Config) { batchConfig(c); store(c) }, func(t *testing.T, env *testEnv) {
				tok := env.PolicyFirst.Token
				policyID := env.createPolicy(tok, "types")
				for _, u := range uploadContentTypes {
					created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID})
					r := putFileAs(t, *created.InputFileUploadUrl, u.file, u.contentType)
					require.Equal(t, http.StatusOK, r.Status, "Content-Type %q: %s", u.contentType, r.Body)
					b := env.waitForBatch(t, tok, created.BatchJobId)
					require.Equal(t, client.BATCHJOBSTATECOMPLETED, b.State, "Content-Type %q: %+v", u.contentType, b.Error)
				}
				// curl -T itself, as the issue ran it: no Content-Type, and
				// the Expect: 100-continue curl sends for larger files.
				curl, err := exec.LookPath("curl")
				if err != nil {
					t.Logf("curl is not installed: the curl -T case is not run")
					return
				}
				file := filepath.Join(t.TempDir(), "items.csv")
				require.NoError(t, os.WriteFile(file, []byte("ref_id,type,content\na,text,buy now\n"), 0o600))
				for _, args := range [][]string{{}, {"-H", "Expect: 100-continue"}} {
					created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID})
					out, err := exec.Command(curl, append([]string{"-sS", "--fail-with-body", "-T", file, *created.InputFileUploadUrl}, args...)...).CombinedOutput()
					require.NoError(t, err, "curl -T %v: %s", args, out)
					b := env.waitForBatch(t, tok, created.BatchJobId)
					require.Equal(t, client.BATCHJOBSTATECOMPLETED, b.State, "curl -T %v: %+v", args, b.Error)
				}
			})
		})
	}
}

// A cancel while the items are being evaluated stops the batch for real:
// it stays CANCELLED with no output, and its jobs that had not started are
// cancelled rather than evaluated.
func TestBatchCancelWhileEvaluating(t *testing.T) {
	// One batch worker: once a batch created after the cancel completes,
	// the worker has stopped driving the cancelled one.
	forEachBackend(t, func(c *Config) { batchConfig(c); c.JobWorkers = 1; c.BatchWorkers = 1 }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		policyID := env.createPolicy(tok, "cancel-live")
		created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID})
		var file strings.Builder
		file.WriteString("ref_id,type,content\n")
		for i := range 5000 {
			fmt.Fprintf(&file, "r%d,text,item %d buy now %s\n", i, i, strings.Repeat("lorem ipsum ", 30))
		}
		r := putFile(t, *created.InputFileUploadUrl, file.String())
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		id := created.BatchJobId
		for deadline := time.Now().Add(60 * time.Second); ; {
			b := env.getBatch(t, tok, id)
			if b.State == client.BATCHJOBSTATEEVALUATING || b.State == client.BATCHJOBSTATESUBMITTED {
				break
			}
			require.NotEqual(t, client.BATCHJOBSTATECOMPLETED, b.State, "the batch finished before the test could cancel it")
			require.True(t, time.Now().Before(deadline), "batch is %s", b.State)
			time.Sleep(5 * time.Millisecond)
		}
		cr, err := env.Client(tok).CancelBatchJobWithResponse(ctx, id, client.CancelBatchJobRequest{})
		require.NoError(t, err)
		require.Equal(t, client.BATCHJOBSTATECANCELLED, cr.JSON200.State)

		count := func(status string) int {
			var n int
			require.NoError(t, env.Main.DB.GetContext(ctx, &n, env.Main.DB.Rebind(`SELECT COUNT(*) FROM jobs j
				JOIN (SELECT DISTINCT job_id FROM batch_items WHERE batch_id = ?) bi ON bi.job_id = j.id
				WHERE j.status = ?`), id, status))
			return n
		}
		// What ran or was done at the cancel; nothing else may be evaluated.
		// Running first: a job that finishes between the two reads is then
		// counted twice, never missed.
		running := count("running")
		finishedAtCancel := running + count("completed")

		marker := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: policyID})
		r = putFile(t, *marker.InputFileUploadUrl, "ref_id,type,content\nm,text,buy now\n")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Equal(t, client.BATCHJOBSTATECOMPLETED, env.waitForBatch(t, tok, marker.BatchJobId).State)

		require.Eventually(t, func() bool { return count("pending") == 0 && count("running") == 0 }, 20*time.Second, 20*time.Millisecond)
		canceled := count("canceled")
		require.Positive(t, canceled, "pending jobs are cancelled")
		b := env.getBatch(t, tok, id)
		require.Equal(t, client.BATCHJOBSTATECANCELLED, b.State)
		require.Nil(t, b.OutputFileUrl)
		require.LessOrEqual(t, count("completed"), finishedAtCancel, "nothing was evaluated after the cancel")
		require.Equal(t, 5000/25, canceled+count("completed")+count("failed"), "every job of the batch ended")
		t.Logf("cancelled with %d/%d jobs not run", canceled, 5000/25)
	})
}
