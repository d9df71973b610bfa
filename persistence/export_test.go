package persistence

import (
	"context"
	"time"

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
