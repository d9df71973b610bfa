package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
)

// TestFairQueue_ShadowJobsYield: both workers run the shadow evaluations
// of account A's two live jobs of many items (the shadow version is slow,
// the live one is not) when account B queues a one-item job. B's job
// completes before either shadow job: the worker hands itself over between
// two items of one shadow job, not only between two jobs of a group.
// Before, B waited for a whole shadow job. The shadow jobs then complete
// with every live result evaluated once, and the yield is not counted as
// an attempt.
func TestFairQueue_ShadowJobsYield(t *testing.T) {
	// Warnings, too: a shadow job left to its lease's expiry says why there.
	configure := func(c *Config) { c.JobWorkers = 2; c.LogLevel = "warn" }
	forEachBackend(t, configure, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		a := env.PolicyFirst
		b := env.newAccount("b", domain.AccountPolicyFirst)
		ca := env.Client(a.Token)
		policyA, policyB := env.createPolicy(a.Token, "main"), env.createPolicy(b.Token, "main")
		vr, err := ca.CreatePolicyVersionWithResponse(ctx, policyA, client.CreatePolicyVersionRequest{
			Text: fmt.Sprintf("LABEL \"Slow\": \"review\" {\n  REGEX(%q)\n}\n", slowRegex),
			Mode: ptr(client.POLICYVERSIONMODESHADOW), ShadowSampleRate: ptr(1.0)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, vr.StatusCode(), "%s", vr.Body)
		shadowVersion := vr.JSON200.PolicyVersion.PolicyVersionId

		// As long as TestFairQueue_RunningJobsYield's jobs, for its reasons:
		// the shadow jobs must outlast B's hand-over by far.
		const items, itemKiB = 64, 2
		for n := range 2 {
			content := make([]client.ContentData, items)
			for i := range content {
				content[i] = textItem(fmt.Sprintf("live %s item %s %s", letters(n), letters(i), slowText(itemKiB)), nil)
			}
			j := env.submit(a.Token, client.CreateJobRequest{PolicyId: policyA, WaitForCompletion: ptr(true), ContentData: content})
			require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		}
		env.waitRunning(domain.JobTypeShadow, 2)

		t.Cleanup(func() {
			if t.Failed() {
				logShadowJobs(t, env)
			}
		})
		queued := time.Now()
		jb := env.submit(b.Token, client.CreateJobRequest{PolicyId: policyB, ContentData: []client.ContentData{textItem("buy now", nil)}})
		require.Equal(t, client.JOBSTATUSCOMPLETED, env.waitForJob(b.Token, jb.JobUuid).Status)
		t.Logf("B's one-item job completed %s after it was queued", time.Since(queued))
		var done int
		require.NoError(t, env.Main.DB.GetContext(ctx, &done, env.Main.DB.Rebind(
			`SELECT COUNT(*) FROM jobs WHERE job_type = ? AND status = 'completed'`), string(domain.JobTypeShadow)))
		require.Zero(t, done, "a shadow job of A completed before B's one-item job")

		// Each shadow job is 64 costly items, and the one that never
		// yields writes its evaluations only at its end: under -race on the
		// loaded 2-core machine they took over the 2 minutes waitForShadow
		// gives, while still evaluating (one job completed, the other
		// running, never yielded: a slow job, not a stranded one). The
		// bound is for a hang only.
		stats := waitForShadowWithin(t, ca, policyA, shadowVersion, 2*items, 10*time.Minute)
		require.EqualValues(t, 2*items, stats.Evaluated, "each live result evaluated once")
		var shadows []struct {
			Status   string `db:"status"`
			Attempts int    `db:"attempts"`
			Yields   int    `db:"yields"`
		}
		require.NoError(t, env.Main.DB.SelectContext(ctx, &shadows, env.Main.DB.Rebind(
			`SELECT status, attempts, yields FROM jobs WHERE job_type = ?`), string(domain.JobTypeShadow)))
		require.Len(t, shadows, 2)
		yielded := 0
		for _, s := range shadows {
			require.Equal(t, string(domain.JobCompleted), s.Status)
			require.Equal(t, 1, s.Attempts, "a yield is not an attempt")
			yielded += s.Yields
		}
		require.Positive(t, yielded, "a shadow job gave its worker to B")
	})
}

// logShadowJobs logs the shadow jobs' queue state, for a failure's report:
// which one is stranded, under whose lease, after how many claims.
func logShadowJobs(t *testing.T, env *testEnv) {
	var rows []struct {
		ID      string  `db:"id"`
		Status  string  `db:"status"`
		Owner   *string `db:"lease_owner"`
		Expires *string `db:"lease_expires_at"`
		Tries   int     `db:"attempts"`
		Yields  int     `db:"yields"`
		Options string  `db:"options"`
	}
	err := env.Main.DB.SelectContext(context.Background(), &rows, env.Main.DB.Rebind(`
		SELECT id, status, lease_owner, CAST(lease_expires_at AS TEXT) AS lease_expires_at, attempts, yields,
		       CAST(options AS TEXT) AS options
		FROM jobs WHERE job_type = ?`), string(domain.JobTypeShadow))
	if err != nil {
		t.Logf("shadow jobs: %v", err)
		return
	}
	t.Logf("worker %s, clock %s", env.Main.Jobs.Owner(), env.Clock.Now())
	var stacks strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
	for _, g := range strings.Split(stacks.String(), "\n\n") {
		if strings.Contains(g, "domain/quality") || strings.Contains(g, "runGroup") {
			t.Logf("goroutine: %s", g)
		}
	}
	for _, r := range rows {
		from := "-"
		if i := strings.Index(r.Options, `"from"`); i >= 0 {
			from = r.Options[i:min(len(r.Options), i+12)]
		}
		t.Logf("shadow job %s: %s owner=%v expires=%v attempts=%d yields=%d %s", r.ID, r.Status, deref(r.Owner), deref(r.Expires), r.Tries, r.Yields, from)
	}
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
