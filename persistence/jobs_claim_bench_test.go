package persistence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// BenchmarkClaimJobs is one worker's cycle on a queue shared by 4
// accounts: claim one job, finish it. It prices the fair claim against the
// finish it is paid beside (go test -run '^$' -bench ClaimJobs).
func BenchmarkClaimJobs(b *testing.B) {
	for _, backend := range persistencetest.Backends(b) {
		b.Run(backend.Name, func(b *testing.B) {
			db := backend.Open(b)
			ctx := b.Context()
			store := persistence.NewJobs(db)
			const accounts = 4
			for a := range accounts {
				require.NoError(b, persistence.NewAccounts(db).CreateAccount(ctx, newAccount(fmt.Sprintf("acct-%d", a), t0)))
			}
			for i := range b.N + 8 {
				created := t0.Add(time.Duration(i) * time.Millisecond)
				require.NoError(b, store.CreateJob(ctx, &domain.Job{
					ID: fmt.Sprintf("job-%07d", i), AccountID: fmt.Sprintf("acct-%d", i%accounts), Type: domain.JobTypeStandard,
					Status: domain.JobPending, Threshold: 0.5, Created: created, Updated: created,
				}))
			}
			now := t0.Add(time.Hour)
			b.ResetTimer()
			for range b.N {
				js, err := store.ClaimJobs(ctx, "w", now, now.Add(time.Minute), 1, 4)
				require.NoError(b, err)
				require.Len(b, js, 1)
				require.NoError(b, store.FinishJob(ctx, js[0].ID, "w", domain.JobCompleted, now, nil, nil, nil))
			}
		})
	}
}

// BenchmarkClaimJobsDepth prices one claim (of one job, with the fair share)
// against the depth of the queue: one account's backlog of 10, 10,000 or
// 100,000 pending jobs beside another account's 10. The claimed job is
// released outside the timer, so every claim sees the same queue.
// (go test -run '^$' -bench ClaimJobsDepth -benchtime 200x ./persistence/)
func BenchmarkClaimJobsDepth(b *testing.B) {
	for _, backend := range persistencetest.Backends(b) {
		for _, depth := range []int{10, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/queued=%d", backend.Name, depth), func(b *testing.B) {
				db := backend.Open(b)
				ctx := b.Context()
				store := persistence.NewJobs(db)
				fillQueue(b, db, "backlog", depth, t0)
				fillQueue(b, db, "small", 10, t0.Add(time.Hour))
				_, err := db.ExecContext(ctx, `ANALYZE`)
				require.NoError(b, err)
				now := t0.Add(2 * time.Hour)
				for b.Loop() {
					js, err := store.ClaimJobs(ctx, "w", now, now.Add(time.Minute), 1, 4)
					require.NoError(b, err)
					require.Len(b, js, 1)
					b.StopTimer()
					require.NoError(b, store.ReleaseJob(ctx, js[0].ID, "w", now))
					b.StartTimer()
				}
			})
		}
	}
}

// fillQueue creates an account with n pending jobs created from first on,
// a microsecond apart, in one statement (100,000 CreateJob calls would
// take minutes).
func fillQueue(tb testing.TB, db *persistence.DB, account string, n int, first time.Time) {
	tb.Helper()
	require.NoError(tb, persistence.NewAccounts(db).CreateAccount(tb.Context(), newAccount(account, t0)))
	insertJobs(tb, db, account, "pending", n, first)
}

// insertJobs inserts n jobs of an account with status (pending or
// completed), created from first on a microsecond apart, with ids
// <account>-<status>-<i>.
func insertJobs(tb testing.TB, db *persistence.DB, account, status string, n int, first time.Time) {
	tb.Helper()
	first = persistence.StoredTime(first)
	prefix := account + "-" + status + "-"
	var q string
	var args []any
	if db.Dialect == persistence.Postgres {
		q = `INSERT INTO jobs (id, account_id, job_type, status, threshold, created, updated, completed)
			SELECT $1 || lpad(i::text, 7, '0'), $2, $3, $4, 0.5, t, t, CASE WHEN $4 = 'completed' THEN t END
			FROM generate_series(0, $5 - 1) AS i, LATERAL (SELECT $6::timestamptz + i * interval '1 microsecond' AS t) AS c`
		args = []any{prefix, account, string(domain.JobTypeStandard), status, n, first}
	} else {
		q = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
			INSERT INTO jobs (id, account_id, job_type, status, threshold, created, updated, completed)
			SELECT ? || printf('%07d', i), ?, ?, ?, 0.5, ? + i, ? + i, CASE WHEN ? = 'completed' THEN ? + i END FROM n`
		micros := first.UnixMicro()
		args = []any{n, prefix, account, string(domain.JobTypeStandard), status, micros, micros, status, micros}
	}
	_, err := db.ExecContext(tb.Context(), q, args...)
	require.NoError(tb, err)
}
