package persistence

// Expiry of evaluation history (docs/operations.md, "Retention"): the
// sweep's lease and the bounded deletes that both dialects share. Whole
// day partitions of PostgreSQL are in retention_partitions.go.

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// Retention implements domain.RetentionStore.
type Retention struct {
	db  *DB
	ddl ddlRetry
}

var _ domain.RetentionStore = (*Retention)(nil)

// NewRetention returns the retention store on db.
func NewRetention(db *DB) *Retention { return &Retention{db: db, ddl: defaultDDLRetry} }

// finishedJobStatuses is the SQL list of the statuses expiry may remove:
// pending and running jobs are work, never history.
const finishedJobStatuses = `('completed', 'failed', 'canceled')`

// finishedBatchStates likewise for batches.
const finishedBatchStates = `('completed', 'error', 'cancelled')`

// ClaimSweep takes the sweep lease when it is free and the sweep due.
// Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) ClaimSweep(ctx context.Context, owner string, now time.Time, lease time.Duration) (bool, error) {
	now = StoredTime(now)
	claimed := false
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`
			UPDATE retention_sweeps SET lease_owner = ?, lease_until = ?
			WHERE id = 1 AND (lease_until IS NULL OR lease_until < ?) AND (next_run IS NULL OR next_run <= ?)`),
			owner, StoredTime(now.Add(lease)), now, now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	})
	return claimed, err
}

// RenewSweep extends owner's lease. Codes: ABORTED; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Retention) RenewSweep(ctx context.Context, owner string, now time.Time, lease time.Duration) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		return sweepGuarded(ctx, tx, `UPDATE retention_sweeps SET lease_until = ? WHERE id = 1 AND lease_owner = ?`,
			StoredTime(now.Add(lease)), owner)
	})
}

// FinishSweep releases owner's lease; the next sweep is due at next.
// Codes: ABORTED; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) FinishSweep(ctx context.Context, owner string, next time.Time) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		return sweepGuarded(ctx, tx, `
			UPDATE retention_sweeps SET lease_owner = '', lease_until = NULL, next_run = ?
			WHERE id = 1 AND lease_owner = ?`, StoredTime(next), owner)
	})
}

func sweepGuarded(ctx context.Context, tx *sqlx.Tx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, tx.Rebind(query), args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return err
		}
		return domain.Errorf(domain.Aborted, "the retention sweep lease is held by another replica")
	}
	return nil
}

// jobHistoryTables are the rows that hang off a job, children first (the
// order SQLite's foreign keys need), each with the column naming the job.
var jobHistoryTables = []string{"shadow_results", "shadow_evaluations", "label_hits", "feedback_annotations", "job_results", "jobs"}

// ExpireJobs deletes up to limit finished jobs of the account created
// before before, and every row of theirs, in one transaction. Codes:
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) ExpireJobs(ctx context.Context, accountID string, before time.Time, limit int) (int64, int, error) {
	var deleted int64
	var jobs int
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		deleted, jobs = 0, 0
		var ids []string
		// The account's (account_id, created, id) index bounds the read.
		err := tx.SelectContext(ctx, &ids, tx.Rebind(`
			SELECT id FROM jobs
			WHERE account_id = ? AND created < ? AND status IN `+finishedJobStatuses+`
			LIMIT ?`), accountID, StoredTime(before), limit)
		if err != nil || len(ids) == 0 {
			return err
		}
		jobs = len(ids)
		if err := takeOutJobs(ctx, s.db, tx, ids); err != nil {
			return err
		}
		for _, table := range jobHistoryTables {
			col := "job_id"
			if table == "jobs" {
				col = "id"
			}
			n, err := execIn(ctx, tx, `DELETE FROM `+table+` WHERE `+col+` IN (?)`, ids)
			if err != nil {
				return err
			}
			deleted += n
		}
		return nil
	})
	return deleted, jobs, err
}

// execIn runs query with its one IN (?) expanded to args and returns the
// rows it affected.
func execIn(ctx context.Context, tx *sqlx.Tx, query string, args []string) (int64, error) {
	q, qargs, err := sqlx.In(query, args)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, tx.Rebind(q), qargs...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ExpiredBatches returns up to limit finished batches of the account
// created before before. Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) ExpiredBatches(ctx context.Context, accountID string, before time.Time, limit int) ([]domain.ExpiredBatch, error) {
	var rows []struct {
		ID        string `db:"id"`
		InputKey  string `db:"input_key"`
		OutputKey string `db:"output_key"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT id, input_key, output_key FROM batch_jobs
		WHERE account_id = ? AND created < ? AND state IN `+finishedBatchStates+`
		ORDER BY created, id LIMIT ?`), accountID, StoredTime(before), limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]domain.ExpiredBatch, len(rows))
	for i, r := range rows {
		out[i] = domain.ExpiredBatch{ID: r.ID, InputKey: r.InputKey, OutputKey: r.OutputKey}
	}
	return out, nil
}

// DeleteBatches deletes the batches and their items. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) DeleteBatches(ctx context.Context, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var deleted int64
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		deleted = 0
		for _, q := range []string{`DELETE FROM batch_items WHERE batch_id IN (?)`, `DELETE FROM batch_jobs WHERE id IN (?)`} {
			n, err := execIn(ctx, tx, q, ids)
			if err != nil {
				return err
			}
			deleted += n
		}
		return nil
	})
	return deleted, err
}

// ExpirePrecheckMatches deletes up to limit of the account's hash-list
// match audit records created before before, through
// precheck_matches_account_idx. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Retention) ExpirePrecheckMatches(ctx context.Context, accountID string, before time.Time, limit int) (int64, error) {
	return s.deleteSelected(ctx, "precheck_matches", `
		SELECT id FROM precheck_matches WHERE account_id = ? AND created < ?
		ORDER BY created LIMIT ?`, accountID, StoredTime(before), limit)
}

// ExpireWebhookEvents deletes up to limit finished webhook events created
// before before. Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) ExpireWebhookEvents(ctx context.Context, before time.Time, limit int) (int64, error) {
	// The predicate repeats webhook_events_done_idx's.
	return s.deleteSelected(ctx, "webhook_events", `
		SELECT id FROM webhook_events
		WHERE (delivered_at IS NOT NULL OR failed_at IS NOT NULL) AND created < ?
		LIMIT ?`, StoredTime(before), limit)
}

// deleteSelected deletes, in one transaction, the rows of table whose ids
// selectIDs reads, and returns how many it deleted.
func (s *Retention) deleteSelected(ctx context.Context, table, selectIDs string, args ...any) (int64, error) {
	var deleted int64
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		deleted = 0
		var ids []string
		if err := tx.SelectContext(ctx, &ids, tx.Rebind(selectIDs), args...); err != nil || len(ids) == 0 {
			return err
		}
		var err error
		deleted, err = execIn(ctx, tx, `DELETE FROM `+table+` WHERE id IN (?)`, ids)
		return err
	})
	return deleted, err
}

// compactPages bounds one incremental vacuum: 4 MiB of 4 KiB pages, a
// short hold of SQLite's write lock.
const compactPages = 1024

// Compact returns up to compactPages free pages of a SQLite file to the
// file system (a database made before auto_vacuum was INCREMENTAL has
// none to return until migration 00094 vacuumed it); PostgreSQL's own
// vacuum does this there. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Retention) Compact(ctx context.Context) error {
	if s.db.Dialect != SQLite {
		return nil
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		// The pragma returns a row per page step; a plain Exec runs it
		// to the end.
		_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, compactPages))
		return err
	})
}

// OldestJob returns when the account's oldest job was created, through
// the account's (account_id, created, id) index. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) OldestJob(ctx context.Context, accountID string) (*time.Time, error) {
	var created []time.Time
	err := s.db.SelectContext(ctx, &created, s.db.Rebind(`
		SELECT created FROM jobs WHERE account_id = ? ORDER BY account_id, created LIMIT 1`), accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	if len(created) == 0 {
		return nil, nil
	}
	t := created[0].UTC()
	return &t, nil
}
