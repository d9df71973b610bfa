package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/lib/pq"
	"github.com/stretchr/testify/require"
)

// TestTwoProcessesSurviveSIGKILL builds the binary, runs two `serve
// --role=all` processes on one PostgreSQL schema, submits 2,000 async jobs,
// kills one process with SIGKILL while the queue is being worked, and checks
// that every job is completed exactly once: the survivor re-claims the dead
// process's jobs when their leases expire.
func TestTwoProcessesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two servers")
	}
	base := os.Getenv(persistencetest.EnvDatabaseURL)
	if base == "" {
		// CI must run it (persistencetest fails the same way).
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("%s must be set under CI", persistencetest.EnvDatabaseURL)
		}
		t.Skipf("%s not set", persistencetest.EnvDatabaseURL)
	}
	t.Parallel()
	ctx := context.Background()

	dbURL, schema, admin := privateSchema(t, "ce_kill_")
	bin := buildBinary(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "jwt.pem")

	// The account, its key and a policy, through the same code the CLI uses.
	cfg := testConfig(t)
	cfg.DatabaseURL, cfg.JWTKeyFile = dbURL, keyFile
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	require.NoError(t, m.Open(ctx, true))
	defer m.Close()
	a, err := createAccount(ctx, m, "kill", domain.AccountPolicyFirst)
	require.NoError(t, err)
	_, token, err := m.Keys.Issue(ctx, a.ID, "kill", 0)
	require.NoError(t, err)

	start := func(name string) *killProc {
		return startKillProc(t, bin, dbURL, filepath.Join(dir, name), keyFile, 2)
	}
	p1, p2 := start("one"), start("two")
	clientOf := func(p *killProc) *client.ClientWithResponses { return p.client(t, token) }
	c1, c2 := clientOf(p1), clientOf(p2)
	pr, err := c1.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
	policyID := pr.JSON200.Policy.PolicyId

	const n = 2000
	text := "please buy now " + string(make([]byte, 0))
	for len(text) < 16<<10 {
		text += "lorem ipsum dolor sit amet, consectetur adipiscing elit; "
	}
	var submitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := c1
			if w%2 == 1 {
				c = c2
			}
			for submitted.Add(1) <= n {
				r, err := c.CreateJobWithResponse(ctx, client.CreateJobRequest{PolicyId: policyID, ContentData: []client.ContentData{{Text: &text}}})
				if err != nil {
					errs <- err
					return
				}
				if r.StatusCode() != http.StatusOK {
					errs <- fmt.Errorf("submit: %d %s", r.StatusCode(), r.Body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	count := func(query string) int {
		var v int
		require.NoError(t, admin.GetContext(ctx, &v, fmt.Sprintf(query, schema)))
		return v
	}
	// Kill process one while it holds jobs. Jobs take about a millisecond,
	// so a process may hold none at any instant: process one is frozen
	// first (SIGSTOP), and its jobs are the running set that stays the same
	// while process two's change; if it froze between claims, it is resumed
	// and frozen again later.
	type held struct {
		ID    string `db:"id"`
		Owner string `db:"lease_owner"`
	}
	runningNow := func() map[string]map[string]bool {
		var rows []held
		require.NoError(t, admin.SelectContext(ctx, &rows, fmt.Sprintf(`SELECT id, lease_owner FROM %s.jobs WHERE status = 'running'`, schema)))
		out := map[string]map[string]bool{}
		for _, r := range rows {
			if out[r.Owner] == nil {
				out[r.Owner] = map[string]bool{}
			}
			out[r.Owner][r.ID] = true
		}
		return out
	}
	deadline := time.Now().Add(2 * time.Minute)
	var deadJobs []string
	for deadJobs == nil {
		require.True(t, time.Now().Before(deadline), "process one never held jobs while frozen")
		if count(`SELECT COUNT(*) FROM %s.jobs WHERE status = 'completed'`) < n/4 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		require.NoError(t, p1.cmd.Process.Signal(syscall.SIGSTOP))
		before := runningNow()
		time.Sleep(300 * time.Millisecond) // process two finishes what it held
		after := runningNow()
		var frozen [][]string // owners whose running jobs did not change
		for owner, ids := range before {
			if len(ids) > 0 && maps.Equal(ids, after[owner]) {
				frozen = append(frozen, slices.Collect(maps.Keys(ids)))
			}
		}
		if len(frozen) == 1 { // process two's jobs may also sit still on a loaded machine: then look again
			deadJobs = frozen[0]
		} else {
			require.NoError(t, p1.cmd.Process.Signal(syscall.SIGCONT))
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.NoError(t, p1.cmd.Process.Signal(syscall.SIGKILL))
	<-p1.done
	atKill := count(`SELECT COUNT(*) FROM %s.jobs WHERE status = 'completed'`)
	running := runningNow()
	t.Logf("process one held %d jobs when killed", len(deadJobs))
	t.Logf("killed process one with %d/%d jobs completed, running under %d owners", atKill, n, len(running))
	require.Less(t, atKill, n, "the kill must come while jobs remain")

	for count(`SELECT COUNT(*) FROM %s.jobs WHERE status IN ('completed', 'failed', 'canceled')`) < n {
		require.True(t, time.Now().Before(deadline), "the survivor did not finish the queue")
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, n, count(`SELECT COUNT(*) FROM %s.jobs WHERE status = 'completed'`), "every job completed")
	require.Equal(t, n, count(`SELECT COUNT(*) FROM %s.job_results`), "one result per job")
	require.Equal(t, 0, count(`SELECT COUNT(*) FROM (SELECT job_id FROM %s.job_results GROUP BY job_id HAVING COUNT(*) <> 1) x`))
	reclaimed := count(`SELECT COUNT(*) FROM %s.jobs WHERE attempts > 1`)
	t.Logf("%d jobs were re-claimed after the kill", reclaimed)
	// The dead process's jobs were all re-claimed; the survivor finished
	// its own without a second claim.
	var again int
	require.NoError(t, admin.GetContext(ctx, &again, fmt.Sprintf(`SELECT COUNT(*) FROM %s.jobs WHERE attempts > 1 AND id = ANY($1)`, schema), pq.Array(deadJobs)))
	require.Equal(t, len(deadJobs), again, "the survivor re-claimed every job the dead process held")
	require.Equal(t, len(deadJobs), reclaimed, "and no other job was claimed twice")
	// Still answering: the survivor serves the results.
	lr, err := c2.ListJobsWithResponse(ctx, &client.ListJobsParams{QueryStatus: ptr(client.JOBSTATUSCOMPLETED), PageSize: ptr(int32(1000))})
	require.NoError(t, err)
	require.Len(t, lr.JSON200.Jobs, 1000)
}
