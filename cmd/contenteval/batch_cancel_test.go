package main

import (
	"context"
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
		testwait.For(t, 60*time.Second, "the batch to be evaluated", func() (bool, error) {
			b := env.getBatch(t, tok, id)
			require.NotEqual(t, client.BATCHJOBSTATECOMPLETED, b.State, "the batch finished before the test could cancel it")
			return b.State == client.BATCHJOBSTATEEVALUATING || b.State == client.BATCHJOBSTATESUBMITTED, fmt.Errorf("batch is %s", b.State)
		})
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
