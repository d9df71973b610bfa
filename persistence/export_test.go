package persistence

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"

	"github.com/jmoiron/sqlx"
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
	if _, err := tx.ExecContext(ctx, queuePlanningSQL); err != nil {
		return "", "", err
	}
	explain := func(query string, args ...any) (string, error) {
		var lines []string
		err := sqlx.SelectContext(ctx, tx, &lines, tx.Rebind("EXPLAIN "+query), args...)
		plan := ""
		for _, l := range lines {
			plan += l + "\n"
		}
		return plan, err
	}
	if read, err = explain(queuedAccountsSQL, queuedAccountsArgs(owner, now, limit)...); err != nil {
		return "", "", err
	}
	claim, err = explain(s.claimSQL(), accountID, now, limit, owner, now, now, now, now)
	return read, claim, err
}

// ExplainMetricsJobs returns the plan of the live metrics' count of job
// results for q (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL, with
// sequential scans discouraged there: the tables of a test are small).
func (s *QualityMetrics) ExplainMetricsJobs(ctx context.Context, q domain.MetricsQuery) (string, error) {
	cond, args := metricsJobs(q)
	query := `SELECT COUNT(*) FROM job_results r JOIN jobs j ON j.id = r.job_id WHERE ` + cond
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback() }()
	explain := "EXPLAIN "
	if s.db.Dialect == SQLite {
		explain = "EXPLAIN QUERY PLAN "
	} else if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		return "", err
	}
	rows, err := tx.QueryxContext(ctx, s.db.Rebind(explain+query), args...)
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
