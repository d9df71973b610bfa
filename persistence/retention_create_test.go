package persistence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestRetention_CreateDoesNotWaitForLiveWrites creates the coming days'
// partitions while a live request's transaction is open on jobs and
// label_hits, as a server's sweep does under steady traffic: the new
// partitions two days ahead and more do not need a lock those requests
// hold, so each is made at its first attempt instead of timing out until
// the sweep gives up (and queueing every request on the table behind each
// attempt). The made
// partitions carry the parent's indexes and foreign keys, as one made by
// the migration does.
func TestRetention_CreateDoesNotWaitForLiveWrites(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	ctx := t.Context()
	now := time.Now().UTC()
	store := persistence.NewRetention(db)
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a", now.Add(-10*day))))
	f := &historyFixture{db: db, jobs: persistence.NewJobs(db)}
	recent := f.finishedJob(t, "a", now, false)

	live, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = live.Rollback() }()
	var status string
	require.NoError(t, live.GetContext(ctx, &status, `SELECT status FROM jobs WHERE id = $1 FOR UPDATE`, recent))
	_, err = live.ExecContext(ctx, `INSERT INTO label_hits (job_id, job_result_id, seq, label, modality, score, start_ms)
		VALUES ($1, 'r-live', 9, 'B', 'text', 1, 0)`, recent)
	require.NoError(t, err)

	// Tomorrow is made under the parent's lock: with the live transaction
	// it waits, is left to a later sweep, and the days after it are made
	// all the same.
	store.SetDDLRetry(3, time.Millisecond)
	midnight := now.Truncate(24 * time.Hour)
	made := func(table string, day time.Time) bool {
		t.Helper()
		var ok bool
		require.NoError(t, db.GetContext(ctx, &ok, `SELECT to_regclass($1) IS NOT NULL`, table+"_p"+day.Format("20060102")))
		return ok
	}
	_, err = store.EnsurePartitions(ctx, midnight, midnight.AddDate(0, 0, 4))
	require.NoError(t, err)
	require.False(t, made("jobs", midnight.AddDate(0, 0, 1)), "tomorrow needs the lock the live transaction holds")
	for _, table := range historyTables {
		for d := 2; d <= 4; d++ {
			require.True(t, made(table, midnight.AddDate(0, 0, d)), "%s, today+%d: left to a later sweep while requests held the tables", table, d)
		}
	}
	require.NoError(t, live.Rollback())
	_, err = store.EnsurePartitions(ctx, midnight, midnight.AddDate(0, 0, 4))
	require.NoError(t, err)
	for _, table := range historyTables {
		require.True(t, made(table, midnight.AddDate(0, 0, 1)), "%s: tomorrow, once the tables are free", table)
	}

	// Each made partition has what the migration's partition of today has.
	shape := func(table string) (indexes, foreignKeys int) {
		t.Helper()
		require.NoError(t, db.GetContext(ctx, &indexes, `SELECT count(*) FROM pg_index WHERE indrelid = to_regclass($1)`, table))
		require.NoError(t, db.GetContext(ctx, &foreignKeys,
			`SELECT count(*) FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'f'`, table))
		return indexes, foreignKeys
	}
	next := now.AddDate(0, 0, 3)
	for _, table := range historyTables {
		wantIdx, wantFK := shape(table + "_p" + now.Format("20060102"))
		gotIdx, gotFK := shape(table + "_p" + next.Format("20060102"))
		require.Equal(t, wantIdx, gotIdx, "%s: indexes", table)
		require.Equal(t, wantFK, gotFK, "%s: foreign keys", table)
		var checks int
		require.NoError(t, db.GetContext(ctx, &checks, `SELECT count(*) FROM pg_constraint WHERE conname = $1`,
			table+"_p"+next.Format("20060102")+"_bound"))
		require.Zero(t, checks, "%s: the bound's CHECK outlives the attach", table)
	}
	// Rows of the new day go to its partition.
	tomorrow := f.finishedJob(t, "a", next, false)
	var where string
	require.NoError(t, db.GetContext(ctx, &where, `SELECT tableoid::regclass::text FROM jobs WHERE id = $1`, tomorrow))
	require.Equal(t, "jobs_p"+next.Format("20060102"), where)
}
