package persistence

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
)

// ExplainQueue returns the PostgreSQL plans of ClaimJobs' read and of one
// account's claim, planned as ClaimJobs plans them (rolled back).
func (s *Jobs) ExplainQueue(ctx context.Context, owner, accountID string, now time.Time, limit int) (read, claim string, err error) {
	now = StoredTime(now)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return "", "", err
	}
	defer func() { _ = tx.Rollback() }()
	var floor string
	if err := tx.GetContext(ctx, &floor, queuePlanningFloorSQL); err != nil {
		return "", "", err
	}
	b := floorBound{s.db.Dialect, floor}
	explain := func(query string, args ...any) (string, error) {
		var lines []string
		err := sqlx.SelectContext(ctx, tx, &lines, tx.Rebind("EXPLAIN "+queueSQL(s.db.Dialect, query)), args...)
		plan := ""
		for _, l := range lines {
			plan += l + "\n"
		}
		return plan, err
	}
	if read, err = explain(queuedAccountsSQL, queuedAccountsArgs(b, owner, now, limit)...); err != nil {
		return "", "", err
	}
	// The claim: the pick, and the update of one picked job (by an id of
	// the account's queue, or any).
	pick, err := explain(pickAccountSQL, b.args(accountID, b.at(now), limit)...)
	if err != nil {
		return "", "", err
	}
	one, err := explain(claimOneSQL, owner, now, now, now, "01900000-0000-7000-8000-000000000000", now)
	return read, pick + one, err
}

// ExplainQueueLoad returns the PostgreSQL plan of QueueLoad's read, planned
// as it is run (outside the claim's transaction settings).
func (s *Jobs) ExplainQueueLoad(ctx context.Context, owner string, now time.Time) (string, error) {
	now = StoredTime(now)
	var lines []string
	b := floorBound{s.db.Dialect, s.db.queueFloor.last()}
	err := s.db.SelectContext(ctx, &lines, s.db.Rebind("EXPLAIN "+queueLoadStmt.on(s.db.Dialect)), b.args(b.at(now), b.at(now), owner, b.at(now))...)
	return strings.Join(lines, "\n"), err
}

// ExplainMetricsJobs returns the plan of the live metrics' scan of the
// version's job results for q (see explain).
func (s *QualityMetrics) ExplainMetricsJobs(ctx context.Context, q domain.MetricsQuery) (string, error) {
	cond, args := metricsJobs(q)
	return explain(ctx, s.db, `SELECT COUNT(*) FROM job_results r JOIN jobs j ON j.id = r.job_id WHERE `+cond, args)
}

// ExplainListJobs returns the plan of ListJobs' query (see explain).
func (s *Jobs) ExplainListJobs(ctx context.Context, accountID string, f domain.JobFilter, after *domain.JobCursor, limit int) (string, error) {
	query, args := listJobsSQL(s.db.Dialect, accountID, f, after, limit)
	return explain(ctx, s.db, query, args)
}

// ExplainClaimOpenItem returns the plan of the claim's read of the next
// open item of the account (of queueID when not "").
func (s *Review) ExplainClaimOpenItem(ctx context.Context, accountID, queueID string) (string, error) {
	query, args := claimCandidateSQL(s.db.Dialect, accountID, queueID, `state = 'open'`, nil)
	return explain(ctx, s.db, query, args)
}

// ExplainClaimNext returns the plan of PostgreSQL's one-statement claim.
func (s *Review) ExplainClaimNext(ctx context.Context, accountID, queueID string) (string, error) {
	now := time.Now()
	query, args := claimNextSQL(accountID, queueID, now)
	return explain(ctx, s.db, query, append(args, "token", "by", now, now))
}

// ExplainDueContent and ExplainHoldingContent return the plans of the
// retention sweep's two reads of the review items that still hold content.
func (s *Review) ExplainDueContent(ctx context.Context, now time.Time) (string, error) {
	return explain(ctx, s.db, dueContentSQL, []any{StoredTime(now), reviewContentBatch})
}

func (s *Review) ExplainHoldingContent(ctx context.Context) (string, error) {
	return explain(ctx, s.db, holdingContentSQL, []any{"", reviewContentBatch})
}

// explain returns the plan of query: EXPLAIN QUERY PLAN on SQLite; on
// PostgreSQL EXPLAIN with sequential scans and sorts priced out, as they
// are on a table of millions of rows (a test's tables are small enough
// that either would be the cheapest plan), so that a Seq Scan or a Sort
// left in the plan means no index serves the query.
func explain(ctx context.Context, db *DB, query string, args []any) (string, error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback() }()
	prefix := "EXPLAIN "
	if db.Dialect == SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	} else if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off"); err != nil {
		return "", err
	}
	rows, err := tx.QueryxContext(ctx, db.Rebind(prefix+query), args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		cols, err := rows.SliceScan()
		if err != nil {
			return "", err
		}
		fmt.Fprintln(&plan, cols...)
	}
	return plan.String(), rows.Err()
}

// MigrateTo applies the migrations of db's dialect up to version and no
// further: a database as an older release left it.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	fsys, err := fs.Sub(migrations, "migrations/"+string(db.Dialect))
	if err != nil {
		return err
	}
	dialect := goose.DialectSQLite3
	if db.Dialect == Postgres {
		dialect = goose.DialectPostgres
	}
	p, err := goose.NewProvider(dialect, db.DB.DB, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// ScanVersionMetrics is VersionMetrics read from the jobs alone, as it was
// before the counts: the reference the counts must agree with.
func (s *QualityMetrics) ScanVersionMetrics(ctx context.Context, q domain.MetricsQuery) ([]*domain.VersionMetric, error) {
	return s.versionMetrics(ctx, q, s.scanJobs)
}

// RecountVersionMetrics empties the metric count tables and counts the
// stored history again with the backfills of migrations 00111 and 00140.
func (db *DB) RecountVersionMetrics(ctx context.Context) error {
	return db.InTx(ctx, func(tx *sqlx.Tx) error {
		for _, m := range []struct{ file, table string }{
			{"00111_version_metric_counts.sql", "version_metric_counts"},
			{"00140_version_metric_hours.sql", "version_metric_hour_counts"},
		} {
			text, err := fs.ReadFile(migrations, "migrations/"+string(db.Dialect)+"/"+m.file)
			if err != nil {
				return err
			}
			up := string(text)
			backfill := up[strings.Index(up, "INSERT INTO "+m.table):strings.Index(up, "-- +goose Down")]
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+m.table); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, backfill); err != nil {
				return err
			}
		}
		return nil
	})
}

// ExplainMetricCounts returns the plan of the live metrics' read of the
// counts of q's version in [from, to), per hour or per day (see explain).
func (s *QualityMetrics) ExplainMetricCounts(ctx context.Context, q domain.MetricsQuery, hourly bool, from, to *time.Time) (string, error) {
	table := dayCounts
	if hourly {
		table = hourCounts
	}
	query, args := metricCountsSQL(q, table, from, to)
	return explain(ctx, s.db, query, args)
}

// DetachAndDrop removes partition name of parent as a day's drop does.
func (s *Retention) DetachAndDrop(ctx context.Context, parent, name string) (int64, error) {
	var rows int64
	err := s.withPartitionConn(ctx, func(conn *sqlx.Conn) error {
		var err error
		rows, err = s.detachAndDrop(ctx, conn, parent, name)
		return err
	})
	return rows, err
}

// AddEvaluationCount adds one evaluation of versionID at hour to shard of
// the metric count tables in tx.
func AddEvaluationCount(ctx context.Context, db *DB, tx *sqlx.Tx, accountID, versionID string, hour time.Time, shard int16) error {
	d := metricDeltas{metricKey{accountID: accountID, versionID: versionID, hour: utcHour(hour)}: &metricCounts{evaluations: 1}}
	return d.applyShard(ctx, db, tx, shard)
}

// SetDDLRetry sets how many times partition DDL tries for its lock, and
// the first pause between tries.
func (s *Retention) SetDDLRetry(attempts int, backoff time.Duration) {
	s.ddl.attempts, s.ddl.backoff, s.ddl.maxBackoff = attempts, backoff, backoff
}

// RunFinishedJobsOnce makes a grouped write of finished jobs that loses to a
// concurrent transaction fail at once instead of running again.
func (db *DB) RunFinishedJobsOnce() { db.finishedJobs.attempts = 1 }

// ReviewItemsOf is the routing step of a job's write alone: how many review
// items the results of job make.
func (db *DB) ReviewItemsOf(ctx context.Context, job domain.ReviewJob, input []domain.ContentItem, results []*domain.JobResult) (int, error) {
	items, err := db.reviewItemsOf(ctx, job, input, results)
	return len(items.rows), err
}

// PostgresPoolSize is how many connections a server opens to PostgreSQL.
const PostgresPoolSize = postgresPoolSize

// MetricCountShards is how many rows a version's counts of a label and a
// day or hour are spread over.
const MetricCountShards = metricCountShards

// QueueFloor returns the job queue's floor ("" on SQLite, which has none).
func QueueFloor(ctx context.Context, db *DB) (string, error) {
	if db.Dialect != Postgres {
		return "", nil
	}
	var floor string
	err := db.GetContext(ctx, &floor, `SELECT floor FROM job_queue_floor WHERE id = 1`)
	return floor, err
}

// ForgetQueueFloor makes db's process forget the floor it last saw, as a
// replica that never claimed has.
func ForgetQueueFloor(db *DB) { db.queueFloor.seen("") }

// AfterQueueFloorMin sets the function a raise of db's queue floor runs
// between reading the lowest unfinished id and writing the floor.
func AfterQueueFloorMin(db *DB, fn func()) { db.queueFloor.afterMin = fn }
