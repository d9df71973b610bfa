package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// runWorkers runs the queue workers of env's process until the test ends
// (for servers started with role api, whose queue is otherwise idle).
func runWorkers(t *testing.T, env *testEnv) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { env.Main.Jobs.RunWorkers(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func TestDailyEvaluationQuota(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		pf := env.PolicyFirst.Token
		policyID := env.createPolicy(pf, "main")
		_, err := env.Main.Accounts.UpdateAccount(ctx, env.PolicyFirst.ID, func(a *domain.Account) error {
			a.Limits.EvaluationsPerDay = 3
			return nil
		})
		require.NoError(t, err)
		env.Main.Keys.ForgetAccount(env.PolicyFirst.ID)
		two := []client.ContentData{textItem("a", nil), textItem("b", nil)}
		one := []client.ContentData{textItem("c", nil)}

		j := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: two})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		j = env.submit(pf, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: two})
		require.Equal(t, client.JOBSTATUSFAILED, j.Status, "2 + 2 > 3")
		require.Equal(t, client.JOBERRORREASONQUOTAEXCEEDED, j.Error.Reason)
		require.Equal(t, domain.ErrJobQuota.Message, j.Error.Message)
		require.Nil(t, j.Results)

		j = env.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: one})
		j = env.waitForJob(pf, j.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status, "2 + 1 <= 3, async")
		j = env.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: one})
		j = env.waitForJob(pf, j.JobUuid)
		require.Equal(t, client.JOBSTATUSFAILED, j.Status)
		require.Equal(t, client.JOBERRORREASONQUOTAEXCEEDED, j.Error.Reason)

		r := env.call(http.MethodPost, "/v1/jobs/stream", pf, `{"policyId":"`+policyID+`","contentData":[{"text":"x"}]}`)
		requireStatus(t, r, http.StatusTooManyRequests, domain.ResourceExhausted)

		// The next UTC day starts afresh.
		env.Clock.Add(24 * time.Hour)
		j = env.submit(pf, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: two})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
	})
}

func TestAdmissionQueueTimeout(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.Role = "api" }, func(t *testing.T, env *testEnv) {
		pf := env.PolicyFirst.Token
		policyID := env.createPolicy(pf, "main")
		late := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: []client.ContentData{textItem("a", nil)}})
		env.Clock.Add(11 * time.Minute)
		fresh := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: []client.ContentData{textItem("b", nil)}})
		runWorkers(t, env)

		j := env.waitForJob(pf, late.JobUuid)
		require.Equal(t, client.JOBSTATUSFAILED, j.Status)
		require.Equal(t, client.JOBERRORREASONADMISSIONQUEUETIMEOUT, j.Error.Reason)
		require.Equal(t, domain.ErrJobAdmission.Message, j.Error.Message)
		j = env.waitForJob(pf, fresh.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
	})
}

// TestCrashedWorkerRecovery simulates a worker that claimed jobs and died:
// once its lease expires another worker re-claims and finishes them, and a
// job past its execution deadline fails with EXECUTION_DEADLINE_EXCEEDED.
func TestCrashedWorkerRecovery(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.Role = "api" }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		pf := env.PolicyFirst.Token
		store := persistence.NewJobs(env.Main.DB)
		policyID := env.createPolicy(pf, "main")
		item := []client.ContentData{textItem("buy now", nil)}

		a := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: item})
		now := env.Clock.Now()
		claimed, err := store.ClaimJobs(ctx, "crashed", now, now.Add(30*time.Second), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		stop := runWorkers(t, env)

		// While the dead worker's lease holds, nobody takes the job. A
		// marker job of the same account submitted now is claimed by a
		// claim that would have taken the older job too (it comes first in
		// the account's queue, and a claim takes several): once the marker
		// is done, that claim has passed the job over.
		marker := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: item})
		require.Equal(t, client.JOBSTATUSCOMPLETED, env.waitForJob(pf, marker.JobUuid).Status)
		held, err := store.GetJob(ctx, env.PolicyFirst.ID, a.JobUuid)
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, held.Status)
		require.Equal(t, "crashed", held.LeaseOwner)
		require.Equal(t, 1, held.Attempts)
		r, err := env.Client(pf).GetJobWithResponse(ctx, a.JobUuid)
		require.NoError(t, err)
		require.Equal(t, client.JOBSTATUSRUNNING, r.JSON200.Job.Status)

		env.Clock.Add(time.Minute)
		j := env.waitForJob(pf, a.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		require.Len(t, *j.Results, 1)
		stored, err := store.GetJob(ctx, env.PolicyFirst.ID, a.JobUuid)
		require.NoError(t, err)
		require.Equal(t, 2, stored.Attempts)
		// The dead worker's late outcome changes nothing.
		err = store.FinishJob(ctx, a.JobUuid, "crashed", domain.JobFailed, env.Clock.Now(), &domain.ErrJobInternal, nil, nil)
		require.Equal(t, domain.Aborted, domain.ErrorCode(err))
		stop()

		// A job re-claimed after its execution deadline fails.
		b := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, ContentData: item})
		now = env.Clock.Now()
		claimed, err = store.ClaimJobs(ctx, "crashed", now, now.Add(time.Minute), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		env.Clock.Add(16 * time.Minute)
		runWorkers(t, env)
		j = env.waitForJob(pf, b.JobUuid)
		require.Equal(t, client.JOBSTATUSFAILED, j.Status)
		require.Equal(t, client.JOBERRORREASONEXECUTIONDEADLINEEXCEEDED, j.Error.Reason)
		require.Equal(t, domain.ErrJobDeadline.Message, j.Error.Message)
	})
}

// TestTwoReplicasShareTheQueue runs two servers with workers on one
// database: every job is completed once, by one of them.
func TestTwoReplicasShareTheQueue(t *testing.T) {
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			env := startServerOn(t, b.Name, db, func(c *Config) { c.JobWorkers = 4 })
			// The second replica shares the database, the signing key and
			// the clock's notion of time (its own real clock would do too).
			second := &Main{Config: env.Main.Config, Stdout: env.Main.Stdout, Stderr: env.Main.Stderr, Clock: env.Clock, DB: db}
			second.Config.Addr = "127.0.0.1:0"
			ctx, cancel := context.WithCancel(context.Background())
			require.NoError(t, second.Open(ctx, false))
			done := make(chan struct{})
			go func() { second.Jobs.RunWorkers(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })

			pf := env.PolicyFirst.Token
			policyID := env.createPolicy(pf, "main")
			const n = 200
			ids := make([]string, n)
			var wg sync.WaitGroup
			sem := make(chan struct{}, 8)
			for i := range n {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					r, err := env.Client(pf).CreateJobWithResponse(context.Background(), client.CreateJobRequest{
						PolicyId: policyID, ContentData: []client.ContentData{textItem(fmt.Sprintf("buy now %d", i), nil)},
					})
					if err == nil && r.JSON200 != nil {
						ids[i] = r.JSON200.Job.JobUuid
					}
				}()
			}
			wg.Wait()
			store := persistence.NewJobs(db)
			for _, id := range ids {
				require.NotEmpty(t, id)
				j := env.waitForJob(pf, id)
				require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
				require.Len(t, *j.Results, 1)
				stored, err := store.GetJob(context.Background(), env.PolicyFirst.ID, id)
				require.NoError(t, err)
				require.Equal(t, 1, stored.Attempts, "claimed once")
			}
		})
	}
}

// TestSyncJobPaths covers both ways a waited-for job runs: small text jobs
// are evaluated first and recorded finished in one write; larger ones are
// recorded running under this process's lease first (durable while they
// run), then finished.
func TestSyncJobPaths(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		pf := env.PolicyFirst.Token
		policyID := env.createPolicy(pf, "main")
		store := persistence.NewJobs(env.Main.DB)
		small := "buy now"
		large := small + " " + strings.Repeat("lorem ipsum ", 70<<10/12)
		for _, text := range []string{small, large} {
			j := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{textItem(text, nil)}})
			require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
			require.Equal(t, client.OUTCOMETRUE, (*j.Results)[0].Report.Result)
			got := env.waitForJob(pf, j.JobUuid)
			require.Equal(t, j.Results, got.Results, "what the request answered is what is stored")
			require.Equal(t, j.Completed, got.Completed)
			stored, err := store.GetJob(context.Background(), env.PolicyFirst.ID, j.JobUuid)
			require.NoError(t, err)
			require.Equal(t, 1, stored.Attempts)
			require.NotNil(t, stored.Started)
			require.Empty(t, stored.LeaseOwner)
			hits, err := store.ListLabelHits(context.Background(), j.JobUuid, "", -1, 10)
			require.NoError(t, err)
			require.Len(t, hits, 1)
		}
	})
}
