package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// TestBatchSurvivesSIGKILL runs the real binary on a 5,000-item batch and
// kills it with SIGKILL twice: once while the items are being enqueued and
// once while they are being evaluated. Each time a new process is started
// on the same database and data directory; it re-claims the batch when the
// lease expires and resumes it. The output must hold each item exactly
// once, in input order, and exactly one job must exist per item.
func TestBatchSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it three times per backend")
	}
	bin := buildBinary(t)

	backends := []string{"sqlite"}
	if os.Getenv(persistencetest.EnvDatabaseURL) != "" {
		backends = append(backends, "postgres")
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			batchKillRun(t, bin, backend)
		})
	}
}

func batchKillRun(t *testing.T, bin, backend string) {
	ctx := context.Background()
	dir := t.TempDir()
	dbURL := "sqlite:" + filepath.Join(dir, "data", "contenteval.db")
	if backend == "postgres" {
		dbURL, _, _ = privateSchema(t, "ce_bkill_")
	}
	keyFile := filepath.Join(dir, "jwt.pem")
	dataDir := filepath.Join(dir, "data")

	cfg := testConfig(t)
	cfg.DatabaseURL, cfg.JWTKeyFile, cfg.DataDir = dbURL, keyFile, dataDir
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	require.NoError(t, m.Open(ctx, true))
	defer m.Close()
	a, err := createAccount(ctx, m, "kill", domain.AccountPolicyFirst)
	require.NoError(t, err)
	_, token, err := m.Keys.Issue(ctx, a.ID, "kill", 0)
	require.NoError(t, err)

	type proc struct {
		cmd  *exec.Cmd
		url  string
		done chan error
	}
	start := func() *proc {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(bin, "serve", "--role=all", "--addr="+addr, "--database-url="+dbURL,
			"--data-dir="+dataDir, "--jwt-key-file="+keyFile, "--rate-rps=0", "--log-level=error",
			"--job-lease=2s", "--job-workers=4", "--job-poll-interval=50ms", "--no-migrate=true")
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		require.NoError(t, cmd.Start())
		p := &proc{cmd: cmd, url: "http://" + addr, done: make(chan error, 1)}
		go func() { p.done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
			}
		})
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := http.Get(p.url + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return p
				}
			}
			require.True(t, time.Now().Before(deadline), "the server did not become ready")
			time.Sleep(50 * time.Millisecond)
		}
	}
	clientOf := func(p *proc) *client.ClientWithResponses {
		c, err := client.NewClientWithResponses(p.url, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
		require.NoError(t, err)
		return c
	}
	kill := func(p *proc) {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		<-p.done
	}

	p := start()
	c := clientOf(p)
	pr, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
	cr, err := c.CreateBatchJobWithResponse(ctx, client.CreateBatchJobRequest{PolicyId: *pr.JSON200.Policy.PolicyId})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cr.StatusCode(), "%s", cr.Body)
	id := *cr.JSON200.BatchJobId

	const n = 5000
	var file strings.Builder
	file.WriteString("ref_id,type,content\n")
	for i := range n {
		fmt.Fprintf(&file, "item-%05d,text,item %d says buy now %s\n", i, i, strings.Repeat("lorem ipsum ", 20))
	}
	up := putFile(t, *cr.JSON200.InputFileUploadUrl, file.String())
	require.Equal(t, http.StatusOK, up.Status, "%s", up.Body)

	state := func(c *client.ClientWithResponses) client.BatchJob {
		r, err := c.ListBatchJobsWithResponse(ctx, &client.ListBatchJobsParams{BatchJobIds: &[]string{id}})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		return (*r.JSON200.BatchJobs)[0]
	}
	waitUntil := func(c *client.ClientWithResponses, what string, ok func(client.BatchJob) bool) client.BatchJob {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			b := state(c)
			if ok(b) {
				return b
			}
			require.True(t, time.Now().Before(deadline), "waiting for %s; batch is %s", what, *b.State)
			time.Sleep(5 * time.Millisecond)
		}
	}
	itemRows := func() int {
		var v int
		require.NoError(t, m.DB.GetContext(ctx, &v, m.DB.Rebind(`SELECT COUNT(*) FROM batch_items WHERE batch_id = ?`), id))
		return v
	}

	// Kill 1: while items are being enqueued (some recorded, not all).
	b := waitUntil(c, "submission", func(b client.BatchJob) bool {
		switch *b.State {
		case client.BATCHJOBSTATEINITIALIZED, client.BATCHJOBSTATEQUEUED, client.BATCHJOBSTATEPREPROCESSING:
			return false
		case client.BATCHJOBSTATEPREPROCESSED:
			return itemRows() > 0 // some chunks recorded (jobs of the last one maybe not created)
		}
		return true // submission was faster than the poll: kill anyway
	})
	kill(p)
	t.Logf("kill 1: batch %s, %d/%d items recorded", *b.State, itemRows(), n)

	// Kill 2: while items are being evaluated.
	p = start()
	c = clientOf(p)
	b = waitUntil(c, "evaluation", func(b client.BatchJob) bool {
		return *b.State == client.BATCHJOBSTATECOMPLETED ||
			(*b.State == client.BATCHJOBSTATEEVALUATING && b.ProcessedCount != nil && *b.ProcessedCount >= n/5)
	})
	kill(p)
	t.Logf("kill 2: batch %s, %d/%d items processed", *b.State, *b.ProcessedCount, n)

	p = start()
	c = clientOf(p)
	b = waitUntil(c, "completion", func(b client.BatchJob) bool {
		return *b.State == client.BATCHJOBSTATECOMPLETED || *b.State == client.BATCHJOBSTATEERROR || *b.State == client.BATCHJOBSTATECANCELLED
	})
	require.Equal(t, client.BATCHJOBSTATECOMPLETED, *b.State, "%+v", b.Error)
	require.EqualValues(t, n, *b.ItemCount)
	require.EqualValues(t, n, *b.ProcessedCount)
	require.EqualValues(t, 0, *b.FailedCount)

	r := getFile(t, *b.OutputFileUrl)
	require.Equal(t, http.StatusOK, r.Status)
	lines := readOutput(t, r.Body)
	require.Len(t, lines, n, "each item exactly once")
	jobs := map[string]int{}
	for i, l := range lines {
		require.Equal(t, fmt.Sprintf("item-%05d", i), l.RefID, "input order")
		require.Equal(t, "JOB_STATUS_COMPLETED", l.Status)
		require.Equal(t, "OUTCOME_TRUE", l.Result)
		require.Equal(t, sha(fmt.Sprintf("item %d says buy now %s", i, strings.Repeat("lorem ipsum ", 20))), l.ContentHash, "the item's own result")
		if i > 0 && l.JobUUID != lines[i-1].JobUUID {
			require.Zero(t, jobs[l.JobUUID], "job %s's items are not consecutive", l.JobUUID)
		}
		jobs[l.JobUUID]++
	}
	var jobCount, resultCount int
	require.NoError(t, m.DB.GetContext(ctx, &jobCount, `SELECT COUNT(*) FROM jobs WHERE job_type = 'JOB_TYPE_BATCH'`))
	require.NoError(t, m.DB.GetContext(ctx, &resultCount, `SELECT COUNT(*) FROM job_results r JOIN jobs j ON j.id = r.job_id WHERE j.job_type = 'JOB_TYPE_BATCH'`))
	require.Equal(t, len(jobs), jobCount, "no job duplicated by the restarts")
	require.Equal(t, n, resultCount, "one result per item")
	t.Logf("%d items in %d jobs", n, jobCount)
}
