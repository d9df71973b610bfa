package main

import (
	"context"
	"fmt"
	"github.com/contenteval/contenteval/internal/testenv"
	"github.com/contenteval/contenteval/internal/testwait"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
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
		testenv.SkipUnlessCI(t, "%s is not set", persistencetest.EnvDatabaseURL)
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

	// Each process's connections carry its name, so that the test can
	// see when the dead one's last statements are over.
	start := func(name string) *killProc {
		return startKillProcLease(t, bin, withApplicationName(t, dbURL, "ce-kill-"+name), filepath.Join(dir, name), keyFile, 2, killTestLease)
	}
	p1, p2 := start("one"), start("two")
	clientOf := func(p *killProc) *client.ClientWithResponses { return p.client(t, token) }
	c1, c2 := clientOf(p1), clientOf(p2)
	pr, err := c1.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
	policyID := pr.JSON200.Policy.PolicyId

	const n = 2000
	submitKillJobs(t, c1, c2, policyID, n)

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
	runningNow := func() map[string]map[string]bool { return runningJobsByOwner(t, admin, schema) }
	deadline := time.Now().Add(3 * time.Minute)
	var deadJobs []string
	var deadOwner string
	for deadJobs == nil {
		require.True(t, time.Now().Before(deadline), "process one never held jobs while frozen")
		testwait.For(t, time.Until(deadline), "a quarter of the jobs completed", func() (bool, error) {
			return count(`SELECT COUNT(*) FROM %s.jobs WHERE status = 'completed'`) >= n/4, nil
		})
		require.NoError(t, p1.cmd.Process.Signal(syscall.SIGSTOP))
		before := runningNow()
		var frozen [][]string // owners whose running jobs did not change
		// Process two may also be stuck: on a row process one locked
		// when it froze. Then there is no telling whose jobs are whose:
		// process one is resumed, and frozen again later.
		err := testwait.Until(min(10*time.Second, time.Until(deadline)), func() (bool, error) {
			var done bool
			frozen, done = frozenOwners(before, runningNow())
			return done, nil
		})
		if err == nil && len(frozen) == 1 {
			deadJobs = frozen[0]
			for owner, ids := range before {
				if ids[deadJobs[0]] {
					deadOwner = owner
				}
			}
		} else { // process one held nothing when frozen, or process two waited on it
			require.NoError(t, p1.cmd.Process.Signal(syscall.SIGCONT))
		}
	}
	require.NoError(t, p1.cmd.Process.Signal(syscall.SIGKILL))
	<-p1.done
	deadJobs = afterLastCommit(t, admin, deadline, deadJobs, deadOwner, runningNow)
	atKill := count(`SELECT COUNT(*) FROM %s.jobs WHERE status = 'completed'`)
	running := runningNow()
	t.Logf("process one held %d jobs when killed", len(deadJobs))
	t.Logf("killed process one with %d/%d jobs completed, running under %d owners", atKill, n, len(running))
	require.Less(t, atKill, n, "the kill must come while jobs remain")

	testwait.For(t, time.Until(deadline), "the survivor to finish the queue", func() (bool, error) {
		return count(`SELECT COUNT(*) FROM %s.jobs WHERE status IN ('completed', 'failed', 'canceled')`) >= n, nil
	})
	requireKillOutcome(t, admin, schema, c2, deadJobs, n)
}

// killTestLease is the job lease of the two-process kill test. It outlasts
// the longest freeze (10 s) plus a renewal period (a third of it):
// otherwise process two would rightly re-claim the jobs of process one
// while it is frozen, before the test knows which they are.
const killTestLease = 20 * time.Second

// withApplicationName is dbURL with the sessions named name.
func withApplicationName(t *testing.T, dbURL, name string) string {
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// afterLastCommit returns the jobs the killed process one (owner) holds,
// dead and any other: a claim it sent before it froze may have been
// waiting on a lock, and commit after its running set was read. Once its
// sessions are gone, they are the running jobs of its owner.
func afterLastCommit(t *testing.T, admin *persistence.DB, deadline time.Time, dead []string, owner string, running func() map[string]map[string]bool) []string {
	t.Helper()
	testwait.For(t, time.Until(deadline), "process one's sessions to end", func() (bool, error) {
		var open int
		err := admin.GetContext(context.Background(), &open, `SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'ce-kill-one'`)
		return open == 0, err
	})
	for id := range running()[owner] {
		if !slices.Contains(dead, id) {
			t.Logf("process one's claim of %s committed after it froze", id)
			dead = append(dead, id)
		}
	}
	return dead
}

// frozenOwners compares the jobs each lease owner was running when
// process one was frozen (before) with those running now. It returns the
// owners whose running set has not changed, and whether process two has
// moved on: every owner but at most one has finished all it held (none of
// its jobs is still running under it), and something changed at all (an
// owner finished its jobs, or one that held nothing claimed some). Until
// then an unchanged set may be process two's, not yet done.
func frozenOwners(before, now map[string]map[string]bool) ([][]string, bool) {
	var frozen [][]string
	holding, moved := 0, false
	for owner, ids := range before {
		if len(ids) == 0 {
			continue
		}
		still := 0
		for id := range ids {
			if now[owner][id] {
				still++
			}
		}
		if still > 0 {
			holding++
		} else {
			moved = true
		}
		if maps.Equal(ids, now[owner]) {
			frozen = append(frozen, slices.Collect(maps.Keys(ids)))
		}
	}
	for owner, ids := range now {
		if len(ids) > 0 && len(before[owner]) == 0 {
			moved = true
		}
	}
	return frozen, moved && holding <= 1
}

// submitKillJobs queues n jobs of text through both processes' clients,
// 16 at a time.
func submitKillJobs(t *testing.T, c1, c2 *client.ClientWithResponses, policyID string, n int64) {
	t.Helper()
	ctx := context.Background()
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
}

// runningJobsByOwner returns the running jobs of the schema by lease owner.
func runningJobsByOwner(t *testing.T, admin *persistence.DB, schema string) map[string]map[string]bool {
	t.Helper()
	type held struct {
		ID    string `db:"id"`
		Owner string `db:"lease_owner"`
	}
	var rows []held
	require.NoError(t, admin.SelectContext(context.Background(), &rows, fmt.Sprintf(`SELECT id, lease_owner FROM %s.jobs WHERE status = 'running'`, schema)))
	out := map[string]map[string]bool{}
	for _, r := range rows {
		if out[r.Owner] == nil {
			out[r.Owner] = map[string]bool{}
		}
		out[r.Owner][r.ID] = true
	}
	return out
}

// requireKillOutcome checks the end of the kill test: every job completed
// once, the dead process's jobs (deadJobs) re-claimed and no other, and
// the survivor still answering.
func requireKillOutcome(t *testing.T, admin *persistence.DB, schema string, c2 *client.ClientWithResponses, deadJobs []string, n int) {
	t.Helper()
	ctx := context.Background()
	count := func(query string) int {
		var v int
		require.NoError(t, admin.GetContext(ctx, &v, fmt.Sprintf(query, schema)))
		return v
	}
	require.Equal(t, n, count(`SELECT COUNT(*) FROM %s.jobs WHERE status = 'completed'`), "every job completed")
	require.Equal(t, n, count(`SELECT COUNT(*) FROM %s.job_results`), "one result per job")
	require.Equal(t, 0, count(`SELECT COUNT(*) FROM (SELECT job_id FROM %s.job_results GROUP BY job_id HAVING COUNT(*) <> 1) x`))
	reclaimed := count(`SELECT COUNT(*) FROM %s.jobs WHERE attempts > 1`)
	t.Logf("%d jobs were re-claimed after the kill", reclaimed)
	// The dead process's jobs were all re-claimed; the survivor finished
	// its own without a second claim.
	// A finish process one had already sent when it was frozen may still
	// commit: such a job ends on its first attempt and is no longer the
	// dead process's to re-claim.
	var again, finishedByOne int
	require.NoError(t, admin.GetContext(ctx, &again, fmt.Sprintf(`SELECT COUNT(*) FROM %s.jobs WHERE attempts > 1 AND id = ANY($1)`, schema), pq.Array(deadJobs)))
	require.NoError(t, admin.GetContext(ctx, &finishedByOne, fmt.Sprintf(`SELECT COUNT(*) FROM %s.jobs WHERE attempts = 1 AND id = ANY($1)`, schema), pq.Array(deadJobs)))
	t.Logf("of the %d jobs process one held, %d were finished by its last commit", len(deadJobs), finishedByOne)
	require.Equal(t, len(deadJobs), again+finishedByOne, "the survivor re-claimed every job the dead process still held")
	require.Equal(t, again, reclaimed, "and no other job was claimed twice")
	// Still answering: the survivor serves the results.
	lr, err := c2.ListJobsWithResponse(ctx, &client.ListJobsParams{QueryStatus: ptr(client.JOBSTATUSCOMPLETED), PageSize: ptr(int32(1000))})
	require.NoError(t, err)
	require.Len(t, lr.JSON200.Jobs, 1000)
}
