package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// dropWaiter is the backend of a partition drop waiting for the jobs
// table's lock, and when its current attempt started.
type dropWaiter struct {
	PID     int       `db:"pid"`
	Started time.Time `db:"query_start"`
}

// waitingDrop returns the backend waiting for an ACCESS EXCLUSIVE lock on
// jobs, if one is.
func waitingDrop(ctx context.Context, db *persistence.DB) (dropWaiter, bool, error) {
	var w []dropWaiter
	err := db.SelectContext(ctx, &w, `
		SELECT a.pid, a.query_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.relation = 'jobs'::regclass AND l.mode = 'AccessExclusiveLock' AND NOT l.granted`)
	if err != nil || len(w) == 0 {
		return dropWaiter{}, false, err
	}
	return w[0], true, nil
}

type dropOutcome struct {
	sweep domain.PartitionSweep
	err   error
}

// TestRetention_DropDoesNotBlockLiveQueries drops an old day while a live
// transaction holds the jobs table: the drop waits for its lock, but in
// bounded attempts that hold no other table's lock meanwhile, so a
// concurrent insert and select go through while it waits (each bounded
// by a lock_timeout of its own, which is how long the database would let
// them queue); once the live transaction ends, a retry drops the day.
func TestRetention_DropDoesNotBlockLiveQueries(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	ctx := t.Context()
	now := time.Now().UTC()
	store := persistence.NewRetention(db)
	const lockTimeout = 100 * time.Millisecond
	store.SetPartitionLockTimeout(lockTimeout)
	_, err := store.EnsurePartitions(ctx, now.Add(-3*day), now)
	require.NoError(t, err)
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a", now.Add(-10*day))))
	f := &historyFixture{db: db, jobs: persistence.NewJobs(db)}
	old := f.finishedJob(t, "a", now.Add(-2*day), false)
	recent := f.finishedJob(t, "a", now, false)

	// A live request's transaction, still open, has read jobs.
	live, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = live.Rollback() }()
	var n int
	require.NoError(t, live.GetContext(ctx, &n, `SELECT count(*) FROM jobs WHERE id = $1`, recent))

	done := make(chan dropOutcome, 1)
	go func() {
		sweep, err := store.DropPartitions(ctx, now.Add(-day), time.Time{})
		done <- dropOutcome{sweep, err}
	}()
	first := awaitDropAttempt(t, db, done, dropWaiter{})

	// While the drop waits for jobs, it holds no lock of the tables it
	// already went through: a request on them is not queued behind it.
	var held []string
	require.NoError(t, db.SelectContext(ctx, &held, `
		SELECT l.relation::regclass::text FROM pg_locks l
		WHERE l.pid = $1 AND l.granted AND l.mode = 'AccessExclusiveLock'
		  AND l.relation IN ('job_results'::regclass, 'label_hits'::regclass, 'feedback_annotations'::regclass,
		                     'shadow_evaluations'::regclass, 'shadow_results'::regclass)`, first.PID))
	require.Empty(t, held, "the drop holds the parent tables it already detached from while it waits for jobs")

	// A concurrent insert and select, each of which gives up if it queues
	// for more than a few of the drop's lock timeouts.
	probe := func(query string, args ...any) {
		t.Helper()
		require.NoError(t, db.InTx(ctx, func(tx *sqlx.Tx) error {
			if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, query, args...)
			return err
		}), query)
	}
	probe(`SELECT count(*) FROM jobs WHERE account_id = 'a'`)
	probe(`SELECT count(*) FROM job_results WHERE job_id = $1`, recent)
	probe(`INSERT INTO label_hits (job_id, job_result_id, seq, label, modality, score, start_ms)
		VALUES ($1, 'r-probe', 9, 'B', 'text', 1, 0)`, recent)

	// The drop tries again rather than giving up on its first timeout.
	awaitDropAttempt(t, db, done, first)
	require.NoError(t, live.Rollback())
	out := <-done
	require.NoError(t, out.err)
	require.Positive(t, out.sweep.Dropped)
	require.Zero(t, f.count(t, "jobs", "id", old), "the old day is dropped once the live transaction ends")
	require.Equal(t, 1, f.count(t, "jobs", "id", recent))
}

// awaitDropAttempt waits until a drop attempt other than prev is waiting
// for the jobs lock and returns it; it fails t if the drop returns first.
func awaitDropAttempt(t *testing.T, db *persistence.DB, done chan dropOutcome, prev dropWaiter) dropWaiter {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		w, ok, err := waitingDrop(ctx, db)
		require.NoError(t, err, "no drop attempt waiting for the jobs lock")
		if ok && !w.Started.Equal(prev.Started) {
			return w
		}
		select {
		case out := <-done:
			done <- out
			t.Fatalf("the drop returned (%+v, %v) instead of waiting again for the jobs lock", out.sweep, out.err)
		case <-tick.C:
		}
	}
}

// TestRetention_DetachConcurrently: of a parent without a default
// partition, a partition is detached concurrently (no lock that blocks
// requests) and dropped; a missing one is nothing to do.
func TestRetention_DetachConcurrently(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	ctx := t.Context()
	for _, stmt := range []string{
		`CREATE TABLE scratch (id TEXT COLLATE "C" NOT NULL) PARTITION BY RANGE (id)`,
		`CREATE TABLE scratch_a PARTITION OF scratch FOR VALUES FROM ('a') TO ('b')`,
		`CREATE TABLE scratch_b PARTITION OF scratch FOR VALUES FROM ('b') TO ('c')`,
		`INSERT INTO scratch VALUES ('a1'), ('a2'), ('b1')`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	store := persistence.NewRetention(db)

	rows, err := store.DetachAndDrop(ctx, "scratch", "scratch_a")
	require.NoError(t, err)
	require.Equal(t, int64(2), rows, "never analysed: counted")
	var left []string
	require.NoError(t, db.SelectContext(ctx, &left, `SELECT id FROM scratch ORDER BY id`))
	require.Equal(t, []string{"b1"}, left)
	var exists bool
	require.NoError(t, db.GetContext(ctx, &exists, `SELECT to_regclass('scratch_a') IS NOT NULL`))
	require.False(t, exists)

	rows, err = store.DetachAndDrop(ctx, "scratch", "scratch_missing")
	require.NoError(t, err)
	require.Zero(t, rows)
}
