package persistence

// The daily evaluation quota, charged once per job under the job's lease:
// a job-store method because the once-only flag is on the job's row, apart
// from jobs.go because it writes the evaluation_usage table.

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// ChargeQuota charges n evaluations of job id to accountID's usage of day,
// once per job (the job's quota_charged flag, set under the owner guard),
// unless the day's total would exceed limit. Codes: ABORTED when owner no
// longer holds the job; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ChargeQuota(ctx context.Context, id, owner, accountID, day string, n, limit int64) (bool, error) {
	ok := false
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var charged bool
		if err := tx.GetContext(ctx, &charged, tx.Rebind(`
			SELECT quota_charged FROM jobs WHERE id = ? AND status = 'running' AND lease_owner = ?`+s.db.forUpdate()), id, owner); err != nil {
			if ErrorCodeIsNotFound(err) {
				return domain.Errorf(domain.Aborted, "job %q is no longer held by this worker", id)
			}
			return err
		}
		if charged {
			ok = true
			return nil
		}
		if n > limit {
			return nil
		}
		var used []int64
		if err := tx.SelectContext(ctx, &used, tx.Rebind(`
			INSERT INTO evaluation_usage (account_id, day, used) VALUES (?, ?, ?)
			ON CONFLICT (account_id, day) DO UPDATE SET used = evaluation_usage.used + excluded.used
			WHERE evaluation_usage.used + excluded.used <= ?
			RETURNING used`), accountID, day, n, limit); err != nil {
			return err
		}
		if len(used) == 0 {
			return nil
		}
		ok = true
		_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE jobs SET quota_charged = ? WHERE id = ?`), true, id)
		return err
	})
	if err != nil {
		return false, err
	}
	return ok, nil
}

// ErrorCodeIsNotFound reports whether err is sql.ErrNoRows or translates to
// NOT_FOUND.
func ErrorCodeIsNotFound(err error) bool {
	return domain.ErrorCode(TranslateError(err)) == domain.NotFound
}
