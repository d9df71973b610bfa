package persistence

// A running job handing its worker over to another account between two of
// its items (the fair share holds per item, not only per claim): the load
// read that decides it, the release that keeps the finished items, and the
// read of those items when the job is claimed again.

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// queueLoadSQL counts each account's jobs under a live lease (through
// jobs_running_idx: as many rows as there are busy workers) and adds the
// accounts with claimable jobs (the loose scan of the claim's read). Its
// arguments are floorBound.at(now) twice (the loose scan's), owner and
// floorBound.at(now).
var queueLoadStmt = floored(queueLoadSQL)

const queueLoadSQL = queuedAccountsCTE + `
	SELECT account_id, SUM(running) AS running, SUM(mine) AS mine, MAX(queued) AS queued FROM (
		SELECT account_id, COUNT(*) AS running,
		       SUM(CASE WHEN lease_owner = ? THEN 1 ELSE 0 END) AS mine, 0 AS queued
		FROM jobs WHERE {floor}status = 'running' AND lease_expires_at >= ?
		GROUP BY account_id
		UNION ALL
		SELECT account_id, 0, 0, 1 FROM queued WHERE account_id IS NOT NULL
	) t GROUP BY account_id ORDER BY account_id`

// QueueLoad returns the accounts with running or claimable jobs at now
// (domain.JobStore.QueueLoad). Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Jobs) QueueLoad(ctx context.Context, owner string, now time.Time) ([]domain.AccountLoad, error) {
	now = StoredTime(now)
	var rows []struct {
		AccountID string `db:"account_id"`
		Running   int    `db:"running"`
		Mine      int    `db:"mine"`
		Queued    int    `db:"queued"`
	}
	// The loose scan's arguments come first: the CTE precedes the SELECT.
	b := floorBound{s.db.Dialect, s.db.queueFloor.last()}
	q := s.db.Rebind(queueLoadStmt.on(s.db.Dialect))
	if err := s.db.SelectContext(ctx, &rows, q, b.args(b.at(now), b.at(now), owner, b.at(now))...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]domain.AccountLoad, len(rows))
	for i, r := range rows {
		out[i] = domain.AccountLoad{AccountID: r.AccountID, Running: r.Running, Mine: r.Mine, Queued: r.Queued > 0}
	}
	return out, nil
}

// YieldJob puts a job owner holds back in the queue with the outcome of
// the items it finished (domain.JobStore.YieldJob). The claim that is
// given back is taken off attempts, which counts the claims that ended in
// a crash, an error or a lost lease. Codes: ABORTED; UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) YieldJob(ctx context.Context, id, owner string, now time.Time, results []*domain.JobResult, hits []*domain.LabelHit) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := guarded(ctx, tx, id, `
			UPDATE jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
			    attempts = attempts - 1, yields = yields + 1, updated = ?
			WHERE id = ? AND status = 'running' AND lease_owner = ?`,
			StoredTime(now), id, owner); err != nil {
			return err
		}
		return s.db.insertOutcome(ctx, tx, id, results, hits)
	})
}

// JobProgress returns the results a yielded job stored and the Seq of its
// next label hit (domain.JobStore.JobProgress). Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) JobProgress(ctx context.Context, id string) ([]*domain.JobResult, int, error) {
	results, err := s.ListJobResults(ctx, id)
	if err != nil || len(results) == 0 {
		return results, 0, err
	}
	var next int
	if err := s.db.GetContext(ctx, &next, s.db.Rebind(`SELECT COALESCE(MAX(seq) + 1, 0) FROM label_hits WHERE job_id = ?`), id); err != nil {
		return nil, 0, TranslateError(err)
	}
	return results, next, nil
}
