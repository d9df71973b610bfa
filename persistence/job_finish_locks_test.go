package persistence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/internal/testwait"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestJobs_FinishedJobsLockCountsInTheTransactionsOrder: the grouped
// statement of finished jobs (PostgreSQL) must take the locks of the metric
// count rows in the order every transaction takes them (day rows, then hour
// rows), or a worker finishing a job of the same version deadlocks with it
// and one of them fails with ABORTED. Here a transaction holds every shard
// of the day row, the grouped statement waits for it, and only then does
// the transaction go on to the hour rows. (The grouped write would run
// again after a deadlock; here it may not, so that the deadlock shows.)
func TestJobs_FinishedJobsLockCountsInTheTransactionsOrder(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	db.RunFinishedJobsOnce()
	ctx := t.Context()
	b := setupJobs(t, db)
	j := completedJob("grouped", b.account.ID)
	j.PolicyVersionID = "v1"
	results := []*domain.JobResult{{ID: "r", JobID: j.ID, ContentHash: "sha256::00", Report: &rules.Report{Result: rules.OutcomeTrue}, Created: *j.Completed}}

	tx, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var pid int
	require.NoError(t, tx.GetContext(ctx, &pid, `SELECT pg_backend_pid()`))
	lockCounts := func(table, bucket string, at time.Time) {
		for shard := range persistence.MetricCountShards {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (account_id, version_id, `+bucket+`, label, shard,
				evaluations, positives, annotations, true_positives, false_positives, true_negatives, false_negatives)
				VALUES ($1, 'v1', $2, '', $3, 0, 0, 0, 0, 0, 0, 0)
				ON CONFLICT (account_id, version_id, `+bucket+`, label, shard) DO UPDATE SET evaluations = `+table+`.evaluations`,
				b.account.ID, at, shard)
			require.NoError(t, err)
		}
	}
	lockCounts("version_metric_counts", "day", j.Created.Truncate(24*time.Hour))

	done := make(chan error, 1)
	go func() { done <- b.jobs.CreateFinishedJob(ctx, j, results, nil) }()
	testwait.For(t, 30*time.Second, "the grouped statement to wait for the day row", func() (bool, error) {
		var n int
		err := db.GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid)
		return n > 0, err
	})
	lockCounts("version_metric_hour_counts", "hour", j.Created.Truncate(time.Hour))
	require.NoError(t, tx.Commit())
	require.NoError(t, <-done)

	var evaluations int
	require.NoError(t, db.GetContext(ctx, &evaluations, `SELECT sum(evaluations) FROM version_metric_hour_counts WHERE version_id = 'v1'`))
	require.Equal(t, 1, evaluations)
}
