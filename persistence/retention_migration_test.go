package persistence_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// prePartitionVersion is the last migration before retention.
const prePartitionVersion = 92

// historyTables are the tables the partitioning migration rebuilds.
var historyTables = []string{"jobs", "job_results", "label_hits", "feedback_annotations",
	"shadow_evaluations", "shadow_results", "webhook_events"}

// populateV92 writes history of every kind into a database at migration
// 92, with the statements of that schema, and returns the job ids. Ids are
// UUIDv7 of several days (one long before any partition the migration
// makes) and ids of other forms.
func populateV92(t *testing.T, db *persistence.DB, now time.Time) []string {
	t.Helper()
	ctx := t.Context()
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := db.ExecContext(ctx, db.Rebind(q), args...)
		require.NoError(t, err)
	}
	exec(`INSERT INTO accounts (id, name, type, created, updated) VALUES ('a', 'a', 'policy-first', ?, ?)`, now, now)
	var ids []string
	ages := []time.Duration{0, day, 2 * day, 3 * day, 100 * day}
	for i := range 20 {
		created := now.Add(-ages[i%len(ages)])
		id := uuidV7At(created)
		if i == 7 {
			id = "job-legacy" // an id of another form: the default partition
		}
		status := []string{"completed", "failed", "pending", "running", "canceled"}[i%5]
		ids = append(ids, id)
		exec(`INSERT INTO jobs (id, account_id, job_type, status, threshold, input, created, updated)
			VALUES (?, 'a', 'standard', ?, 0.5, '[{"kind":"text","text":"hi"}]', ?, ?)`, id, status, created, created)
		rid := fmt.Sprintf("%s-r", id)
		exec(`INSERT INTO job_results (id, job_id, seq, content_hash, report, created) VALUES (?, ?, 0, 'sha256::00', '', ?)`, rid, id, created)
		exec(`INSERT INTO label_hits (job_id, job_result_id, seq, label, modality, score, start_ms, spans)
			VALUES (?, ?, 0, 'A', 'text', 1, 0, '')`, id, rid)
		exec(`INSERT INTO feedback_annotations (id, account_id, job_id, job_result_id, target_key, label, expected_outcome,
			actual_outcome, created, updated) VALUES (?, 'a', ?, ?, 'sha256::00', 'A', 'EVALUATION_RESULT_TRUE',
			'EVALUATION_RESULT_TRUE', ?, ?)`, id+"-f", id, rid, created, created)
		exec(`INSERT INTO shadow_evaluations (shadow_version_id, job_result_id, account_id, policy_id, active_version_id,
			job_id, job_created, disagrees, created) VALUES ('sv', ?, 'a', 'p', 'av', ?, ?, ?, ?)`, rid, id, created, i%2 == 0, created)
		exec(`INSERT INTO shadow_results (shadow_version_id, job_result_id, label, active_outcome, shadow_outcome, disagrees)
			VALUES ('sv', ?, 'A', 'TRUE', 'FALSE', ?)`, rid, true)
		exec(`INSERT INTO webhook_events (id, account_id, url, type, subject_kind, subject_id, created)
			VALUES (?, 'a', 'https://example.com', 'job.completed', 'job', ?, ?)`, "msg_"+uuidV7At(created), id, created)
	}
	return ids
}

// TestRetention_MigratesPopulatedDatabase migrates a database populated at
// migration 92 to the current schema and checks that every row survived,
// in its day's partition on PostgreSQL, and that the stores read it.
func TestRetention_MigratesPopulatedDatabase(t *testing.T) {
	t.Parallel()
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := b.OpenUnmigrated(t)
			require.NoError(t, db.MigrateTo(ctx, prePartitionVersion))
			if db.Dialect == persistence.SQLite {
				// As a file made before incremental vacuum was configured.
				conn, err := db.Conn(ctx)
				require.NoError(t, err)
				_, err = conn.ExecContext(ctx, `PRAGMA auto_vacuum = NONE`)
				require.NoError(t, err)
				_, err = conn.ExecContext(ctx, `VACUUM`)
				require.NoError(t, err)
				var mode int
				require.NoError(t, conn.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode))
				require.Zero(t, mode)
				require.NoError(t, conn.Close())
			}
			now := time.Now().UTC()
			ids := populateV92(t, db, now)
			before := map[string]int{}
			for _, table := range historyTables {
				var n int
				require.NoError(t, db.GetContext(ctx, &n, `SELECT COUNT(*) FROM `+table))
				before[table] = n
			}
			require.NoError(t, db.Migrate(ctx))

			for _, table := range historyTables {
				var n int
				require.NoError(t, db.GetContext(ctx, &n, `SELECT COUNT(*) FROM `+table))
				require.Equal(t, before[table], n, "%s lost rows", table)
			}
			var orphans int
			require.NoError(t, db.GetContext(ctx, &orphans, `SELECT COUNT(*) FROM shadow_results WHERE job_id = ''`))
			require.Zero(t, orphans, "every shadow result names its job")

			jobs := persistence.NewJobs(db)
			for _, id := range ids {
				j, err := jobs.GetJob(ctx, "a", id)
				require.NoError(t, err, id)
				require.Equal(t, "hi", j.Input[0].Text)
				results, err := jobs.ListResultsOfJobs(ctx, []string{id})
				require.NoError(t, err)
				require.Len(t, results[id], 1)
				fb, err := persistence.NewFeedback(db).ListFeedback(ctx, "a", id, nil, 10)
				require.NoError(t, err)
				require.Len(t, fb, 1)
			}
			page, err := jobs.ListJobs(ctx, "a", domain.JobFilter{}, nil, 100)
			require.NoError(t, err)
			require.Len(t, page, len(ids))
			claimed, err := jobs.ClaimJobs(ctx, "w", now, now.Add(time.Minute), 100, 100)
			require.NoError(t, err)
			require.NotEmpty(t, claimed, "the pending jobs are still queued")

			if db.Dialect == persistence.SQLite {
				// The file made before incremental vacuum was rewritten
				// with it, so expiry can give pages back.
				var mode int
				require.NoError(t, db.GetContext(ctx, &mode, `PRAGMA auto_vacuum`))
				require.Equal(t, 2, mode, "auto_vacuum is INCREMENTAL")
			}
			if db.Dialect == persistence.Postgres {
				var where string
				require.NoError(t, db.GetContext(ctx, &where, `SELECT tableoid::regclass::text FROM jobs WHERE id = $1`, ids[1]))
				require.Equal(t, "jobs_p"+now.Add(-day).Format("20060102"), where)
				require.NoError(t, db.GetContext(ctx, &where, `SELECT tableoid::regclass::text FROM label_hits WHERE job_id = $1`, ids[7]))
				require.Equal(t, "label_hits_pdefault", where)
				// Older than a month: the one legacy partition, not a
				// partition a day.
				require.NoError(t, db.GetContext(ctx, &where, `SELECT tableoid::regclass::text FROM feedback_annotations WHERE job_id = $1`, ids[4]))
				require.Equal(t, "feedback_annotations_plegacy", where)
			}
		})
	}
}

// TestRetention_PartitionsAheadSurviveRestartAndRace creates the day
// partitions ahead from two replicas at once, then again as a restarted
// process would: every day gets each partition once, and nobody fails.
func TestRetention_PartitionsAheadSurviveRestartAndRace(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		if db.Dialect != persistence.Postgres {
			t.Skip("SQLite has no partitions")
		}
		ctx := t.Context()
		now := time.Now().UTC()
		var wg sync.WaitGroup
		created := make([]domain.PartitionSweep, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				created[i], errs[i] = persistence.NewRetention(db).EnsurePartitions(ctx, now, now.AddDate(0, 0, 10))
			}()
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		// The migration made today; 10 days more, 7 tables.
		require.Equal(t, 10*len(historyTables), created[0].Created+created[1].Created)

		again, err := persistence.NewRetention(db).EnsurePartitions(ctx, now, now.AddDate(0, 0, 10))
		require.NoError(t, err)
		require.Zero(t, again.Created, "a restarted process finds them made")
		for _, table := range historyTables {
			var n int
			require.NoError(t, db.GetContext(ctx, &n, `SELECT COUNT(*) FROM pg_inherits WHERE inhparent = to_regclass($1)`, table))
			require.Equal(t, 11+1, n, "%s: 11 days and the default", table)
		}
		// A row of a day made ahead lands in it.
		id := uuidV7At(now.AddDate(0, 0, 5))
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a", now)))
		require.NoError(t, persistence.NewJobs(db).CreateJob(ctx, &domain.Job{ID: id, AccountID: "a", Type: domain.JobTypeStandard,
			Status: domain.JobPending, Threshold: 0.5, Created: now, Updated: now}))
		var where string
		require.NoError(t, db.GetContext(ctx, &where, `SELECT tableoid::regclass::text FROM jobs WHERE id = $1`, id))
		require.Equal(t, "jobs_p"+now.AddDate(0, 0, 5).Format("20060102"), where)
	})
}
