package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// holdingJobStore holds the workers' claims while held, as a database
// that stopped answering would.
type holdingJobStore struct {
	domain.JobStore
	mu      sync.Mutex
	release chan struct{} // nil: claims pass
	entered chan struct{}
}

// hold makes the next claims wait until let.
func (s *holdingJobStore) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release, s.entered = make(chan struct{}), make(chan struct{}, 1)
}

// let lets the held claim and the later ones pass.
func (s *holdingJobStore) let() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.release != nil {
		close(s.release)
		s.release = nil
	}
}

func (s *holdingJobStore) ClaimJobs(ctx context.Context, owner string, now, leaseUntil time.Time, limit, accountMax int) ([]*domain.Job, error) {
	s.mu.Lock()
	release, entered := s.release, s.entered
	s.mu.Unlock()
	if release != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.JobStore.ClaimJobs(ctx, owner, now, leaseUntil, limit, accountMax)
}

// startWorker runs a --role worker process on api's database and clock,
// with its health listener on a free loopback port.
func startWorker(t *testing.T, api *testEnv) (*Main, *holdingJobStore) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Role, cfg.HealthAddr, cfg.JWTKeyFile = "worker", "127.0.0.1:0", api.Main.Config.JWTKeyFile
	store := &holdingJobStore{}
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard, Clock: api.Clock, DB: api.Main.DB,
		wrapJobStore: func(s domain.JobStore) domain.JobStore { store.JobStore = s; return store }}
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, m.Open(ctx, false))
	require.NoError(t, m.ListenHealth())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	t.Cleanup(func() {
		store.let()
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("worker did not shut down")
		}
	})
	return m, store
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

var claimedMetric = regexp.MustCompile(`(?m)^contenteval_worker_jobs_claimed_total (\d+)$`)

// A worker serves /healthz, /readyz and /metrics on --health-addr and no
// API; /healthz fails while its claim loop is stuck.
func TestWorkerHealthListener(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.Role = "api" }, func(t *testing.T, api *testEnv) {
		worker, store := startWorker(t, api)
		base := "http://" + worker.HealthAddr()

		code, body := getBody(t, base+"/healthz")
		require.Equal(t, http.StatusOK, code, body)
		code, body = getBody(t, base+"/readyz")
		require.Equal(t, http.StatusOK, code, body)
		for _, path := range []string{"/v1/jobs", "/v1/labels", "/openapi.yaml", "/docs"} {
			code, _ = getBody(t, base+path)
			require.Equal(t, http.StatusNotFound, code, path)
		}
		hc, stderr := healthcheck(t, nil, "--role", "worker", "--health-addr", worker.HealthAddr())
		require.Equal(t, 0, hc, stderr)

		// A job queued through the api is run by the worker and counted
		// on the worker's /metrics.
		pf := api.PolicyFirst.Token
		policyID := api.createPolicy(pf, "main")
		j := api.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: []client.ContentData{textItem("buy now", nil)}})
		require.Equal(t, client.JOBSTATUSCOMPLETED, api.waitForJob(pf, j.JobUuid).Status)
		code, body = getBody(t, base+"/metrics")
		require.Equal(t, http.StatusOK, code)
		m := claimedMetric.FindStringSubmatch(body)
		require.NotNil(t, m, body)
		n, _ := strconv.Atoi(m[1])
		require.GreaterOrEqual(t, n, 1)
		for _, name := range []string{"contenteval_worker_jobs_finished_total", "contenteval_worker_claim_loop_last_pass_timestamp_seconds",
			`contenteval_webhook_deliveries_total{outcome="delivered"}`, "go_goroutines"} {
			require.Contains(t, body, name)
		}

		// The claim loop stops in a claim the database does not answer;
		// once the clock passes the stall limit the worker is not alive.
		store.hold()
		waitFor(t, store.entered, "a held claim")
		api.Clock.Add(worker.Jobs.StallLimit() + time.Second)
		code, body = getBody(t, base+"/healthz")
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		require.Contains(t, body, "claim loop")
		code, _ = getBody(t, base+"/readyz")
		require.Equal(t, http.StatusOK, code, "the database still answers")
		hc, stderr = healthcheck(t, nil, "--role", "worker", "--health-addr", worker.HealthAddr())
		require.Equal(t, 1, hc, stderr)
		require.Contains(t, stderr, "GET /healthz: 503")

		// The claim answers, the loop goes round again: alive.
		store.let()
		require.Eventually(t, func() bool {
			code, _ := getBody(t, base+"/healthz")
			return code == http.StatusOK
		}, 30*time.Second, 20*time.Millisecond)
	})
}
