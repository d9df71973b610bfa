package main

import (
	"context"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// TestBatchSurvivesSIGKILL runs the real binary on a 5,000-item batch and
// kills it with SIGKILL twice: once while the items are being enqueued and
// once while they are being evaluated. Each time a new process is started
// on the same database and data directory; it re-claims the batch when the
// lease expires and resumes it. The output must hold each item exactly
// once, in input order, and exactly one job must exist per item. Each kill
// is checked to have come in its phase (the database, read once the
// process is dead, shows the submission or the evaluation unfinished); a
// kill that came too late fails the test.
func TestBatchSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it three times per backend")
	}
	// SQLite, and PostgreSQL when configured; under CI a missing
	// PostgreSQL fails the test rather than skipping half of it.
	backends := persistencetest.Backends(t)
	bin := buildBinary(t)
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			batchKillRun(t, bin, b.Name)
			t.Logf("%s: %s", b.Name, time.Since(start).Round(time.Millisecond))
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

	start := func(jobWorkers int) *killProc { return startKillProc(t, bin, dbURL, dataDir, keyFile, jobWorkers) }
	clientOf := func(p *killProc) *client.ClientWithResponses { return p.client(t, token) }

	p := start(4)
	c := clientOf(p)
	pr, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
	cr, err := c.CreateBatchJobWithResponse(ctx, client.CreateBatchJobRequest{PolicyId: pr.JSON200.Policy.PolicyId})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cr.StatusCode(), "%s", cr.Body)
	id := cr.JSON200.BatchJobId

	const n = 5000
	up := putFile(t, *cr.JSON200.InputFileUploadUrl, batchKillFile(n))
	require.Equal(t, http.StatusOK, up.Status, "%s", up.Body)

	killWhen := func(p *killProc, what string, before []domain.BatchState, ready func(batchProgress) bool) batchProgress {
		return killBatchWhen(t, m, p, id, n, what, before, ready)
	}

	// Kill 1: while items are being enqueued, once some chunks are
	// recorded and before all are. The submission of 5,000 items is ten
	// chunks: the database is read without pause so as not to miss it.
	s := killWhen(p, "submission",
		[]domain.BatchState{domain.BatchInitialized, domain.BatchQueued, domain.BatchPreprocessing, domain.BatchPreprocessed},
		func(s batchProgress) bool {
			return s.State == string(domain.BatchPreprocessed) && s.Recorded > 0 && s.Recorded < n
		})
	require.Equal(t, string(domain.BatchPreprocessed), s.State, "the kill came during submission")
	require.Positive(t, s.Recorded, "the kill came during submission")
	require.Less(t, s.Submitted, n, "the kill came before every item was submitted")

	// Kill 2: while items are being evaluated: the batch EVALUATING, some
	// of its jobs not done. The evaluation can outrun the resumed
	// submission (the jobs run as they are created), so the test holds a
	// few jobs itself, as a worker that died would: claimed, and their
	// lease not expiring before the kill.
	jobStore := persistence.NewJobs(m.DB)
	const holder = "held-by-the-test"
	held := 0
	p = start(1)
	s = killWhen(p, "evaluation",
		[]domain.BatchState{domain.BatchPreprocessed, domain.BatchSubmitted, domain.BatchEvaluating},
		func(s batchProgress) bool {
			if held < 5 {
				now := time.Now()
				got, err := jobStore.ClaimJobs(ctx, holder, now, now.Add(time.Hour), 5-held, 0)
				require.NoError(t, err)
				held += len(got)
			}
			return s.State == string(domain.BatchEvaluating) && held > 0
		})
	require.Equal(t, string(domain.BatchEvaluating), s.State, "the kill came during evaluation")
	require.LessOrEqual(t, s.Evaluated, n-held, "the held jobs are not done")
	// The holder is gone too: its leases expire.
	_, err = m.DB.ExecContext(ctx, m.DB.Rebind(`UPDATE jobs SET lease_expires_at = ? WHERE lease_owner = ?`),
		persistence.StoredTime(time.Now().Add(-time.Minute)), holder)
	require.NoError(t, err)

	p = start(4)
	c = clientOf(p)
	b := waitForBatchState(t, c, id, "completion", func(b client.BatchJob) bool {
		return b.State == client.BATCHJOBSTATECOMPLETED || b.State == client.BATCHJOBSTATEERROR || b.State == client.BATCHJOBSTATECANCELLED
	})
	require.Equal(t, client.BATCHJOBSTATECOMPLETED, b.State, "%+v", b.Error)
	require.EqualValues(t, n, b.ItemCount)
	require.EqualValues(t, n, b.ProcessedCount)
	require.EqualValues(t, 0, b.FailedCount)

	requireBatchKillOutput(t, m, *b.OutputFileUrl, n)
}

// batchKillFile is the input of the kill test's batch: n text items.
func batchKillFile(n int) string {
	var file strings.Builder
	file.WriteString("ref_id,type,content\n")
	for i := range n {
		fmt.Fprintf(&file, "item-%05d,text,item %d says buy now %s\n", i, i, strings.Repeat("lorem ipsum ", 20))
	}
	return file.String()
}

// waitForBatchState waits until batch id satisfies ok.
func waitForBatchState(t *testing.T, c *client.ClientWithResponses, id, what string, ok func(client.BatchJob) bool) client.BatchJob {
	t.Helper()
	var b client.BatchJob
	testwait.For(t, 3*time.Minute, what, func() (bool, error) {
		r, err := c.ListBatchJobsWithResponse(context.Background(), &client.ListBatchJobsParams{BatchJobIds: &[]string{id}})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		b = r.JSON200.BatchJobs[0]
		return ok(b), fmt.Errorf("batch is %s", b.State)
	})
	return b
}

// batchProgress is, read in one query, a batch's state, how many of its
// items are recorded, how many of those have their jobs submitted and how
// many are evaluated (their job is terminal).
type batchProgress struct {
	State     string `db:"state"`
	Recorded  int    `db:"recorded"`
	Submitted int    `db:"submitted"`
	Evaluated int    `db:"evaluated"`
}

func batchProgressOf(t *testing.T, m *Main, id string) batchProgress {
	t.Helper()
	var s batchProgress
	require.NoError(t, m.DB.GetContext(context.Background(), &s, m.DB.Rebind(`SELECT b.state,
		(SELECT COUNT(*) FROM batch_items WHERE batch_id = b.id) AS recorded,
		(SELECT COUNT(*) FROM batch_items WHERE batch_id = b.id AND status = 'submitted') AS submitted,
		(SELECT COUNT(*) FROM batch_items bi JOIN jobs j ON j.id = bi.job_id
		 WHERE bi.batch_id = b.id AND j.status IN ('completed', 'failed', 'canceled')) AS evaluated
		FROM batch_jobs b WHERE b.id = ?`), id))
	return s
}

// killBatchWhen kills p once ready holds of batch id (of n items), failing
// the test if the batch gets past the states in before it does.
func killBatchWhen(t *testing.T, m *Main, p *killProc, id string, n int, what string,
	before []domain.BatchState, ready func(batchProgress) bool) batchProgress {
	t.Helper()
	// Read without pause: the state to kill in may last a moment only.
	testwait.Busy(t, 3*time.Minute, what, func() (bool, error) {
		s := batchProgressOf(t, m, id)
		if ready(s) {
			return true, nil
		}
		if !slices.Contains(before, domain.BatchState(s.State)) {
			t.Fatalf("the batch got past %s (it is %s: %d/%d items recorded, %d evaluated) before the test could kill the process", what, s.State, s.Recorded, n, s.Evaluated)
		}
		return false, fmt.Errorf("batch is %s", s.State)
	})
	p.kill(t)
	// The process is dead: the database shows where it stopped.
	s := batchProgressOf(t, m, id)
	t.Logf("killed during %s: batch %s, %d/%d items recorded, %d submitted, %d evaluated", what, s.State, s.Recorded, n, s.Submitted, s.Evaluated)
	return s
}

// requireBatchKillOutput checks the output of the kill test's batch: each
// item exactly once, in input order, in jobs no restart duplicated.
func requireBatchKillOutput(t *testing.T, m *Main, url string, n int) {
	t.Helper()
	ctx := context.Background()
	r := getFile(t, url)
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
