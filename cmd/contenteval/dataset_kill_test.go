package main

import (
	"context"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// TestDatasetRunSurvivesSIGKILL runs the real binary on a 3,000-example
// dataset run and kills it with SIGKILL while the run is being evaluated:
// some chunks done, some running, some held by a claimer that dies with
// it. A new process on the same database finishes the run; its counts must
// be exact (each example counted once) and its results must hold each
// example once.
func TestDatasetRunSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it twice per backend")
	}
	backends := persistencetest.Backends(t)
	bin := buildBinary(t)
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			datasetKillRun(t, bin, b.Name)
		})
	}
}

// killProc is a contenteval process of a kill test.
type killProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when the process has exited
}

// startKillProc starts `contenteval serve` on dbURL and waits for /readyz.
// Its job lease is 2 s, so that a killed process's jobs are re-claimed
// soon.
func startKillProc(t *testing.T, bin, dbURL, dataDir, keyFile string, jobWorkers int) *killProc {
	t.Helper()
	return startKillProcLease(t, bin, dbURL, dataDir, keyFile, jobWorkers, 2*time.Second)
}

// startKillProcLease is startKillProc with a job lease of lease.
func startKillProcLease(t *testing.T, bin, dbURL, dataDir, keyFile string, jobWorkers int, lease time.Duration) *killProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--role=all", "--addr="+addr, "--database-url="+dbURL,
		"--data-dir="+dataDir, "--jwt-key-file="+keyFile, "--rate-rps=0", "--log-level=error",
		"--job-lease="+lease.String(), "--job-workers="+strconv.Itoa(jobWorkers), "--job-poll-interval=50ms", "--no-migrate=true")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	require.NoError(t, cmd.Start())
	p := &killProc{cmd: cmd, url: "http://" + addr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	waitReady(t, p.url)
	return p
}

// client is a generated client of p whose exchanges the contract transport
// checks against openapi.yaml.
func (p *killProc) client(t *testing.T, token string) *client.ClientWithResponses {
	t.Helper()
	registerContractHost(p.url)
	c, err := client.NewClientWithResponses(p.url, client.WithHTTPClient(specClient), client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	require.NoError(t, err)
	return c
}

func (p *killProc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

func datasetKillRun(t *testing.T, bin, backend string) {
	ctx := context.Background()
	dir := t.TempDir()
	dbURL := "sqlite:" + filepath.Join(dir, "data", "contenteval.db")
	if backend == "postgres" {
		dbURL, _, _ = privateSchema(t, "ce_dkill_")
	}
	keyFile, dataDir := filepath.Join(dir, "jwt.pem"), filepath.Join(dir, "data")
	cfg := testConfig(t)
	cfg.DatabaseURL, cfg.JWTKeyFile, cfg.DataDir = dbURL, keyFile, dataDir
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	require.NoError(t, m.Open(ctx, true))
	defer m.Close()
	a, err := createAccount(ctx, m, "kill", domain.AccountLabelFirst)
	require.NoError(t, err)
	_, token, err := m.Keys.Issue(ctx, a.ID, "kill", 0)
	require.NoError(t, err)

	const n = 3000
	inputs, want := datasetKillExamples(n)

	p := startKillProc(t, bin, dbURL, dataDir, keyFile, 2)
	c := p.client(t, token)
	lr, err := c.CreateLabelWithResponse(ctx, client.CreateLabelRequest{Name: "Spam"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, lr.StatusCode(), "%s", lr.Body)
	labelID := lr.JSON200.Label.LabelId
	vr, err := c.CreateLabelVersionWithResponse(ctx, labelID, client.CreateLabelVersionRequest{Text: `=("buy now")`})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, vr.StatusCode(), "%s", vr.Body)
	for from := 0; from < n; from += 1000 {
		r, err := c.CreateDatasetExamplesWithResponse(ctx, labelID, client.CreateDatasetExamplesRequest{Examples: inputs[from : from+1000]})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	}
	run := startRun(t, c, labelID, vr.JSON200.LabelVersion.LabelVersionId, nil)
	chunks := (n + 249) / 250

	progressNow := func() runProgress { return runProgressOf(t, m, run.DatasetRunId) }
	// Kill while the run is evaluated: some chunks done, and some held by
	// the test as a worker that dies with the process would hold them
	// (claimed, their lease far from expiring).
	jobStore := persistence.NewJobs(m.DB)
	const holder = "held-by-the-test"
	held := 0
	// Read without pause: the run must be caught while it is running.
	testwait.Busy(t, 2*time.Minute, "the run to start", func() (bool, error) {
		if held < 2 {
			now := time.Now()
			got, err := jobStore.ClaimJobs(ctx, holder, now, now.Add(time.Hour), 2-held, 0)
			require.NoError(t, err)
			held += len(got)
		}
		s := progressNow()
		require.NotEqual(t, string(domain.DatasetRunCompleted), s.State, "the run finished before the test could kill the process")
		return held > 0 && s.ChunksLeft < chunks, fmt.Errorf("run %s, %d of %d chunks left, %d held", s.State, s.ChunksLeft, chunks, held)
	})
	p.kill(t)
	s := progressNow()
	t.Logf("killed: run %s, %d of %d chunks left, %d results, %d chunks held", s.State, s.ChunksLeft, chunks, s.Results, held)
	require.Equal(t, string(domain.DatasetRunRunning), s.State)
	require.GreaterOrEqual(t, s.ChunksLeft, held, "the held chunks are not done")
	_, err = m.DB.ExecContext(ctx, m.DB.Rebind(`UPDATE jobs SET lease_expires_at = ? WHERE lease_owner = ?`),
		persistence.StoredTime(time.Now().Add(-time.Minute)), holder)
	require.NoError(t, err)

	p = startKillProc(t, bin, dbURL, dataDir, keyFile, 4)
	c = p.client(t, token)
	done := waitForRun(t, c, labelID, run.DatasetRunId)
	require.Equal(t, client.DATASETRUNSTATECOMPLETED, done.State)
	require.Equal(t, int32(n), done.ExampleCount)
	require.Equal(t, want, [4]int32{done.TruePositives, done.FalsePositives, done.TrueNegatives, done.FalseNegatives}, "each example counted once")
	require.Zero(t, done.Failed)

	var rows, distinct int
	require.NoError(t, m.DB.GetContext(ctx, &rows, m.DB.Rebind(`SELECT COUNT(*) FROM dataset_run_results WHERE run_id = ?`), run.DatasetRunId))
	require.NoError(t, m.DB.GetContext(ctx, &distinct, m.DB.Rebind(`SELECT COUNT(DISTINCT example_id) FROM dataset_run_results WHERE run_id = ?`), run.DatasetRunId))
	require.Equal(t, n, rows, "one result per example")
	require.Equal(t, n, distinct)
}

// datasetKillExamples are the kill test's n examples: example i says "buy
// now" when i is even and is expected TRUE when i is a multiple of 3, so
// the counts (TP FP TN FN) are known in advance.
func datasetKillExamples(n int) ([]client.DatasetExampleInput, [4]int32) {
	var want [4]int32 // TP FP TN FN
	inputs := make([]client.DatasetExampleInput, n)
	for i := range n {
		text := fmt.Sprintf("example %d: the weather is nice", i)
		if i%2 == 0 {
			text = fmt.Sprintf("example %d: buy now", i)
		}
		expected := client.EVALUATIONRESULTFALSE
		if i%3 == 0 {
			expected = client.EVALUATIONRESULTTRUE
		}
		switch pos, exp := i%2 == 0, i%3 == 0; {
		case pos && exp:
			want[0]++
		case pos:
			want[1]++
		case !exp:
			want[2]++
		default:
			want[3]++
		}
		inputs[i] = client.DatasetExampleInput{ContentData: client.ContentData{Text: &text}, ExpectedOutcome: expected}
	}
	return inputs, want
}

// runProgress is a dataset run's state, chunks left and results recorded.
type runProgress struct {
	State      string `db:"state"`
	ChunksLeft int    `db:"chunks_left"`
	Results    int    `db:"results"`
}

func runProgressOf(t *testing.T, m *Main, runID string) runProgress {
	t.Helper()
	var s runProgress
	require.NoError(t, m.DB.GetContext(context.Background(), &s, m.DB.Rebind(`SELECT state, chunks_left,
		(SELECT COUNT(*) FROM dataset_run_results WHERE run_id = r.id) AS results
		FROM dataset_runs r WHERE id = ?`), runID))
	return s
}
