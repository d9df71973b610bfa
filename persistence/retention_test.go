package persistence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/retention"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

const day = 24 * time.Hour

// jobRowTables are every table holding a row of one finished fixture job,
// with the column naming the job.
var jobRowTables = []struct{ table, col string }{
	{"jobs", "id"}, {"job_results", "job_id"}, {"label_hits", "job_id"}, {"feedback_annotations", "job_id"},
	{"shadow_evaluations", "job_id"}, {"shadow_results", "job_id"},
}

// TestRetention_ExpiresEveryKindOfHistory sweeps a database holding
// history of every kind, old and new, under a server retention of 30 days
// and an account's own of 7, and checks what went and what stayed: old
// finished jobs with all their rows, old finished batches with their blobs,
// old hash-list match records and old delivered webhook events go; pending and running work, recent
// history, undelivered events, unfinished batches, policies, labels, their
// versions and dataset examples stay. On PostgreSQL the old days are in
// day partitions made ahead by the sweep (dropped whole) or hold live work
// (deleted in batches).
func TestRetention_ExpiresEveryKindOfHistory(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		now := time.Now().UTC()
		store := persistence.NewRetention(db)
		// Partitions for every day of the fixture, as a worker running
		// all along would have made them.
		_, err := store.EnsurePartitions(ctx, now.Add(-45*day), now)
		require.NoError(t, err)

		accounts := persistence.NewAccounts(db)
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("long", now.Add(-60*day))))
		short := newAccount("short", now.Add(-60*day))
		short.Retention = 7 * day
		require.NoError(t, accounts.CreateAccount(ctx, short))
		f := &historyFixture{db: db, jobs: persistence.NewJobs(db)}
		blobs := &memBlobs{}

		gone := map[string]string{
			"old finished job":              f.finishedJob(t, "long", now.Add(-40*day), true),
			"finished job beside live work": f.finishedJob(t, "long", now.Add(-41*day).Add(time.Minute), false),
			"short account's old job":       f.finishedJob(t, "short", now.Add(-10*day), false),
		}
		kept := map[string]string{
			"recent finished job":             f.finishedJob(t, "long", now.Add(-20*day), false),
			"short account's recent job":      f.finishedJob(t, "short", now.Add(-3*day), false),
			"old pending job":                 f.openJob(t, "long", now.Add(-41*day), domain.JobPending),
			"old running job":                 f.openJob(t, "short", now.Add(-41*day), domain.JobRunning),
			"short account's old pending job": f.openJob(t, "short", now.Add(-10*day), domain.JobPending),
		}
		oldBatch := f.batch(t, blobs, "long", now.Add(-40*day), domain.BatchCompleted)
		liveBatch := f.batch(t, blobs, "long", now.Add(-40*day), domain.BatchEvaluating)
		newBatch := f.batch(t, blobs, "short", now.Add(-2*day), domain.BatchCompleted)
		oldEvent := f.webhookEvent(t, "long", now.Add(-8*day), true)
		undelivered := f.webhookEvent(t, "long", now.Add(-9*day), false)
		newEvent := f.webhookEvent(t, "long", now.Add(-2*day), true)
		curated := curatedData(t, db, "long", now.Add(-50*day))
		oldMatch := f.precheckMatch(t, "long", now.Add(-40*day))
		shortOldMatch := f.precheckMatch(t, "short", now.Add(-10*day))
		newMatch := f.precheckMatch(t, "long", now.Add(-20*day))

		svc := retention.NewService(retention.Deps{Store: store, Accounts: accounts, Blobs: blobs,
			Clock: &fixedClock{t: now}, Owner: "test"}, retention.Config{Retention: 30 * day, BatchSize: 2})
		rep, err := svc.Sweep(ctx)
		require.NoError(t, err)
		require.Positive(t, rep.RowsDeleted)
		if db.Dialect == persistence.Postgres {
			require.Positive(t, rep.PartitionsDropped, "the old days without live work are dropped whole")
		}

		for what, id := range gone {
			for _, tc := range jobRowTables {
				require.Zero(t, f.count(t, tc.table, tc.col, id), "%s: %s rows left", what, tc.table)
			}
		}
		for what, id := range kept {
			require.Equal(t, 1, f.count(t, "jobs", "id", id), "%s was removed", what)
		}
		require.Equal(t, 1, f.count(t, "job_results", "job_id", kept["recent finished job"]))
		require.Equal(t, 1, f.count(t, "shadow_results", "job_id", kept["short account's recent job"]))
		_, err = f.jobs.GetJob(ctx, "long", gone["old finished job"])
		requireCode(t, err, domain.NotFound)

		require.Zero(t, f.count(t, "batch_jobs", "id", oldBatch))
		require.Zero(t, f.count(t, "batch_items", "batch_id", oldBatch))
		require.False(t, blobs.has("batches/"+oldBatch+"/input.jsonl") || blobs.has("batches/"+oldBatch+"/output.jsonl"))
		for _, id := range []string{liveBatch, newBatch} {
			require.Equal(t, 1, f.count(t, "batch_jobs", "id", id))
			require.True(t, blobs.has("batches/"+id+"/input.jsonl"))
		}

		require.Zero(t, f.count(t, "webhook_events", "id", oldEvent))
		require.Zero(t, f.count(t, "webhook_events", "subject_id", gone["old finished job"]))
		require.Equal(t, 1, f.count(t, "webhook_events", "id", undelivered))
		require.Equal(t, 1, f.count(t, "webhook_events", "id", newEvent))

		require.Zero(t, f.count(t, "precheck_matches", "id", oldMatch))
		require.Zero(t, f.count(t, "precheck_matches", "id", shortOldMatch))
		require.Equal(t, 1, f.count(t, "precheck_matches", "id", newMatch))

		for table, id := range curated {
			require.Equal(t, 1, f.count(t, table, "id", id), "%s expired", table)
		}
		require.NotNil(t, rep.OldestRetained)
		require.WithinDuration(t, now.Add(-41*day), *rep.OldestRetained, time.Second)
	})
}

// curatedData stores a policy with its version, a label with its version
// and a dataset example, all created at created, and returns their ids by
// table.
func curatedData(t *testing.T, db *persistence.DB, account string, created time.Time) map[string]string {
	t.Helper()
	ctx := t.Context()
	p, v := newPolicy(account, "policy-old", "old", created)
	require.NoError(t, persistence.NewPolicies(db).CreatePolicy(ctx, p, v))
	l := &domain.Label{ID: "label-old", AccountID: account, Name: "Old", Created: created, Updated: created}
	require.NoError(t, persistence.NewLabels(db).CreateLabel(ctx, l, nil))
	lv := &domain.LabelVersion{ID: "label-old-v1", LabelID: l.ID, AccountID: account, Text: `LABEL "Old" { =("a") }`, Created: created}
	require.NoError(t, persistence.NewLabelVersions(db).CreateLabelVersion(ctx, lv))
	ex := &domain.DatasetExample{ID: "example-old", AccountID: account, LabelID: l.ID,
		Content: domain.ContentItem{Kind: domain.ContentText, Text: "a"}, ContentHash: "sha256::a",
		Expected: domain.EvaluationResultTrue, Created: created}
	require.NoError(t, persistence.NewDatasets(db).CreateExamples(ctx, account, l.ID, []*domain.DatasetExample{ex}, 10))
	return map[string]string{"policies": p.ID, "policy_versions": v.ID, "labels": l.ID, "label_versions": lv.ID, "dataset_examples": ex.ID}
}

// TestRetention_ZeroKeepsEverything: with --retention 0 and no account
// retention, no job goes, however old.
func TestRetention_ZeroKeepsEverything(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		now := time.Now().UTC()
		store := persistence.NewRetention(db)
		_, err := store.EnsurePartitions(ctx, now.Add(-400*day), now.Add(-399*day))
		require.NoError(t, err)
		accounts := persistence.NewAccounts(db)
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("a", now.Add(-500*day))))
		f := &historyFixture{db: db, jobs: persistence.NewJobs(db)}
		id := f.finishedJob(t, "a", now.Add(-400*day), false)
		svc := retention.NewService(retention.Deps{Store: store, Accounts: accounts, Clock: &fixedClock{t: now}}, retention.Config{})
		_, err = svc.Sweep(ctx)
		require.NoError(t, err)
		for _, tc := range jobRowTables {
			require.Equal(t, 1, f.count(t, tc.table, tc.col, id), "%s expired with retention 0", tc.table)
		}
	})
}

// TestRetention_SweepLeaseOneAtATime: of two replicas, one gets the sweep
// and the other does not until it is due again.
func TestRetention_SweepLeaseOneAtATime(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		store := persistence.NewRetention(db)
		now := t0
		ok, err := store.ClaimSweep(ctx, "a", now, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = store.ClaimSweep(ctx, "b", now, time.Minute)
		require.NoError(t, err)
		require.False(t, ok, "the lease is held")
		requireCode(t, store.RenewSweep(ctx, "b", now, time.Minute), domain.Aborted)
		require.NoError(t, store.RenewSweep(ctx, "a", now, time.Minute))
		require.NoError(t, store.FinishSweep(ctx, "a", now.Add(time.Hour)))
		ok, err = store.ClaimSweep(ctx, "b", now.Add(time.Minute), time.Minute)
		require.NoError(t, err)
		require.False(t, ok, "not due before the interval")
		ok, err = store.ClaimSweep(ctx, "b", now.Add(time.Hour), time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		// A sweeper that died: its lease runs out and another takes over.
		ok, err = store.ClaimSweep(ctx, "a", now.Add(time.Hour+2*time.Minute), time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	})
}

// TestRetention_BatchedDeletesAreBounded: a step deletes at most its batch
// of jobs, so a large expiry is many short transactions.
func TestRetention_BatchedDeletesAreBounded(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		now := time.Now().UTC()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a", now.Add(-60*day))))
		f := &historyFixture{db: db, jobs: persistence.NewJobs(db)}
		for i := range 5 {
			f.finishedJob(t, "a", now.Add(-40*day).Add(time.Duration(i)*time.Second), false)
		}
		store := persistence.NewRetention(db)
		var steps []int
		for {
			_, n, err := store.ExpireJobs(ctx, "a", now.Add(-30*day), 2)
			require.NoError(t, err)
			steps = append(steps, n)
			if n < 2 {
				break
			}
		}
		require.Equal(t, []int{2, 2, 1}, steps, fmt.Sprint(steps))
	})
}
