package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// TestBatchThroughput is the batch benchmark (bench/results/
// batch.md): the release binary on PostgreSQL evaluates a 25,000-item text
// batch; the test reports items/s from upload to COMPLETED and the server's
// peak RSS (VmHWM). It runs only when CONTENTEVAL_BENCH_BATCH=1 (and the
// PostgreSQL URL is set), as it measures rather than checks.
func TestBatchThroughput(t *testing.T) {
	if os.Getenv("CONTENTEVAL_BENCH_BATCH") != "1" {
		t.Skip("set CONTENTEVAL_BENCH_BATCH=1 to run the batch benchmark")
	}
	base := os.Getenv(persistencetest.EnvDatabaseURL)
	if base == "" {
		t.Skipf("%s not set", persistencetest.EnvDatabaseURL)
	}
	n := 25000
	if v, err := strconv.Atoi(os.Getenv("CONTENTEVAL_BENCH_BATCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	dir := t.TempDir()
	bin := buildBinary(t)

	dbURL, _, _ := privateSchema(t, "ce_bbench_")

	keyFile, dataDir := filepath.Join(dir, "jwt.pem"), filepath.Join(dir, "data")
	cfg := testConfig(t)
	cfg.DatabaseURL, cfg.JWTKeyFile, cfg.DataDir = dbURL, keyFile, dataDir
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	require.NoError(t, m.Open(ctx, true))
	defer m.Close()
	a, err := createAccount(ctx, m, "bench", domain.AccountPolicyFirst)
	require.NoError(t, err)
	_, token, err := m.Keys.Issue(ctx, a.ID, "bench", 0)
	require.NoError(t, err)

	srvURL, pid := startBatchBenchServer(t, bin, dbURL, dataDir, keyFile)
	c, err := client.NewClientWithResponses(srvURL, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	require.NoError(t, err)
	pr, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "bench", Text: testPolicyText})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
	cr, err := c.CreateBatchJobWithResponse(ctx, client.CreateBatchJobRequest{PolicyId: pr.JSON200.Policy.PolicyId})
	require.NoError(t, err)
	id := cr.JSON200.BatchJobId

	var file strings.Builder
	file.WriteString("ref_id,type,content\n")
	for i := range n {
		fmt.Fprintf(&file, "item-%06d,text,item %d: please buy now or i will kill you %s\n", i, i, strings.Repeat("lorem ipsum dolor ", 10))
	}
	size := file.Len()
	start := time.Now()
	up := putFile(t, *cr.JSON200.InputFileUploadUrl, file.String())
	require.Equal(t, http.StatusOK, up.Status, "%s", up.Body)
	var done client.BatchJob
	var peak int64
	phases := map[client.BatchJobState]time.Duration{}
	for deadline := time.Now().Add(10 * time.Minute); ; {
		peak = max(peak, vmHWM(t, pid))
		r, err := c.ListBatchJobsWithResponse(ctx, &client.ListBatchJobsParams{BatchJobIds: &[]string{id}})
		require.NoError(t, err)
		done = r.JSON200.BatchJobs[0]
		if _, seen := phases[done.State]; !seen {
			phases[done.State] = time.Since(start).Round(time.Millisecond)
		}
		if s := done.State; s == client.BATCHJOBSTATECOMPLETED || s == client.BATCHJOBSTATEERROR || s == client.BATCHJOBSTATECANCELLED {
			break
		}
		require.True(t, time.Now().Before(deadline))
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	peak = max(peak, vmHWM(t, pid))
	require.Equal(t, client.BATCHJOBSTATECOMPLETED, done.State, "%+v", done.Error)
	require.EqualValues(t, n, done.ProcessedCount)
	out := getFile(t, *done.OutputFileUrl)
	require.Equal(t, http.StatusOK, out.Status)
	t.Logf("first seen after upload: %v", phases)
	t.Logf("batch of %d text items (%.1f MB CSV), %s job workers: %s from upload to COMPLETED = %.0f items/s; server peak RSS %.0f MB; output %.1f MB",
		n, float64(size)/(1<<20), benchJobWorkers(), elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), float64(peak)/1024, float64(len(out.Body))/(1<<20))
}

// vmHWM returns the peak resident set size of pid in KiB (Linux).
func vmHWM(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}

// startBatchBenchServer starts the binary on the benchmark's database with
// CONTENTEVAL_BENCH_JOB_WORKERS workers (16), stopped when t ends, and
// returns its URL, once it is ready, and its process id.
func startBatchBenchServer(t *testing.T, bin, dbURL, dataDir, keyFile string) (string, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	workers := benchJobWorkers()
	cmd := exec.Command(bin, "serve", "--role=all", "--addr="+addr, "--database-url="+dbURL,
		"--data-dir="+dataDir, "--jwt-key-file="+keyFile, "--rate-rps=0", "--log-level=error",
		"--job-workers="+workers, "--job-poll-interval=20ms", "--no-migrate=true", "--body-limit=104857600")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	srvURL := "http://" + addr
	waitReady(t, srvURL)
	return srvURL, cmd.Process.Pid
}

// benchJobWorkers is the benchmark server's job workers:
// CONTENTEVAL_BENCH_JOB_WORKERS, 16 by default.
func benchJobWorkers() string {
	if w := os.Getenv("CONTENTEVAL_BENCH_JOB_WORKERS"); w != "" {
		return w
	}
	return "16"
}
