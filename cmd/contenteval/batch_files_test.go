package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/blobstore"
	"github.com/contenteval/contenteval/blobstore/blobstoretest"
	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/stretchr/testify/require"
)

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
