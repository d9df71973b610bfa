package persistence

// Batch rows: the BatchJobs store, the batch_jobs table's rows, their
// guarded state transitions and the worker's lease. A batch's items and the
// reads joining them to their jobs are in batch_items.go.

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// BatchJobs implements domain.BatchStore.
//
// Two queries read the jobs and job_results tables (BatchProgress,
// ListBatchOutcomes: one join instead of a read per item), and the cancel
// transition moves the batch's still-pending jobs to 'canceled' with a
// guarded UPDATE (WHERE status = 'pending'), so a cancelled batch stops
// consuming the job workers. Jobs already running finish normally.
type BatchJobs struct{ db *DB }

var _ domain.BatchStore = (*BatchJobs)(nil)

// NewBatchJobs returns the batch store.
func NewBatchJobs(db *DB) *BatchJobs { return &BatchJobs{db: db} }

const batchColumns = `id, account_id, name, policy_id, policy_key, policy_version_id, webhook_url, state,
	error_code, error_message, input_key, output_key, item_count, processed_count, failed_count,
	lease_owner, lease_expires_at, created, updated, completed, options`

type batchRow struct {
	ID              string     `db:"id"`
	AccountID       string     `db:"account_id"`
	Name            string     `db:"name"`
	PolicyID        string     `db:"policy_id"`
	PolicyKey       string     `db:"policy_key"`
	PolicyVersionID string     `db:"policy_version_id"`
	WebhookURL      string     `db:"webhook_url"`
	State           string     `db:"state"`
	ErrorCode       string     `db:"error_code"`
	ErrorMessage    string     `db:"error_message"`
	InputKey        string     `db:"input_key"`
	OutputKey       string     `db:"output_key"`
	ItemCount       int        `db:"item_count"`
	ProcessedCount  int        `db:"processed_count"`
	FailedCount     int        `db:"failed_count"`
	LeaseOwner      string     `db:"lease_owner"`
	LeaseExpiresAt  *time.Time `db:"lease_expires_at"`
	Created         time.Time  `db:"created"`
	Updated         time.Time  `db:"updated"`
	Completed       *time.Time `db:"completed"`
	Options         string     `db:"options"`
}

func (r *batchRow) toDomain() *domain.BatchJob {
	return &domain.BatchJob{
		ID: r.ID, AccountID: r.AccountID, Name: r.Name, PolicyID: r.PolicyID, PolicyKey: r.PolicyKey,
		PolicyVersionID: r.PolicyVersionID, WebhookURL: r.WebhookURL, State: domain.BatchState(r.State),
		ErrorCode: domain.BatchErrorCode(r.ErrorCode), ErrorMessage: r.ErrorMessage,
		InputKey: r.InputKey, OutputKey: r.OutputKey, ItemCount: r.ItemCount,
		ProcessedCount: r.ProcessedCount, FailedCount: r.FailedCount, LeaseOwner: r.LeaseOwner,
		LeaseExpiresAt: utcPtr(r.LeaseExpiresAt), Created: r.Created.UTC(), Updated: r.Updated.UTC(),
		Completed: utcPtr(r.Completed),
		// The column is written only by CreateBatch, from a validated map.
		Options: batchOptions(r.Options),
	}
}

func batchOptions(s string) map[string]string {
	var m map[string]string
	if unmarshalJSON(s, &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

// CreateBatch inserts b. Codes: ALREADY_EXISTS, NOT_FOUND (account);
// UNAVAILABLE.
func (s *BatchJobs) CreateBatch(ctx context.Context, b *domain.BatchJob) error {
	b.Created, b.Updated, b.Completed = StoredTime(b.Created), StoredTime(b.Updated), storedTimePtr(b.Completed)
	options := "{}"
	if len(b.Options) > 0 {
		var err error
		if options, err = marshalJSON(b.Options); err != nil {
			return err
		}
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO batch_jobs (id, account_id, name, policy_id, policy_key, policy_version_id, webhook_url,
				state, error_code, error_message, created, updated, completed, options)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			b.ID, b.AccountID, b.Name, b.PolicyID, b.PolicyKey, b.PolicyVersionID, b.WebhookURL,
			string(b.State), string(b.ErrorCode), b.ErrorMessage, b.Created, b.Updated, b.Completed, options)
		return err
	})
	err = describe(err, domain.AlreadyExists, "batch job %q already exists", b.ID)
	return describe(err, domain.NotFound, "account %q not found", b.AccountID)
}

// GetBatch returns a batch of the account. Codes: NOT_FOUND; UNAVAILABLE.
func (s *BatchJobs) GetBatch(ctx context.Context, accountID, id string) (*domain.BatchJob, error) {
	var r batchRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+batchColumns+` FROM batch_jobs WHERE id = ? AND account_id = ?`), id, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "batch job %q not found", id)
	}
	return r.toDomain(), nil
}

// GetBatchByID returns a batch of any account. Codes: NOT_FOUND; UNAVAILABLE.
func (s *BatchJobs) GetBatchByID(ctx context.Context, id string) (*domain.BatchJob, error) {
	var r batchRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+batchColumns+` FROM batch_jobs WHERE id = ?`), id)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "batch job %q not found", id)
	}
	return r.toDomain(), nil
}

func getBatchTx(ctx context.Context, tx *sqlx.Tx, id string) (*domain.BatchJob, error) {
	var r batchRow
	if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+batchColumns+` FROM batch_jobs WHERE id = ?`), id); err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "batch job %q not found", id)
	}
	return r.toDomain(), nil
}

// ListBatches returns the account's batches matching f, newest first.
// Codes: UNAVAILABLE.
func (s *BatchJobs) ListBatches(ctx context.Context, accountID string, f domain.BatchFilter, limit int) ([]*domain.BatchJob, error) {
	where := []string{"account_id = ?"}
	args := []any{accountID}
	if len(f.IDs) > 0 {
		where = append(where, "id IN (?"+strings.Repeat(", ?", len(f.IDs)-1)+")")
		for _, id := range f.IDs {
			args = append(args, id)
		}
	}
	if len(f.States) > 0 {
		where = append(where, "state IN (?"+strings.Repeat(", ?", len(f.States)-1)+")")
		for _, st := range f.States {
			args = append(args, string(st))
		}
	}
	args = append(args, limit)
	var rows []batchRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+batchColumns+` FROM batch_jobs
		WHERE `+strings.Join(where, " AND ")+` ORDER BY created DESC, id DESC LIMIT ?`), args...)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.BatchJob, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// TransitionBatch applies one guarded transition (see domain.BatchStore).
// Codes: ABORTED (guard failed), NOT_FOUND; UNAVAILABLE.
func (s *BatchJobs) TransitionBatch(ctx context.Context, t domain.BatchTransition) (*domain.BatchJob, error) {
	now := StoredTime(t.Now)
	var out *domain.BatchJob
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		set := []string{"state = ?", "updated = ?"}
		args := []any{string(t.To), now}
		if t.ItemCount != nil {
			set = append(set, "item_count = ?")
			args = append(args, *t.ItemCount)
		}
		if t.ErrorCode != "" {
			set = append(set, "error_code = ?", "error_message = ?")
			args = append(args, string(t.ErrorCode), t.ErrorMessage)
		}
		if t.OutputKey != "" {
			set = append(set, "output_key = ?")
			args = append(args, t.OutputKey)
		}
		if t.InputKey != "" {
			set = append(set, "input_key = ?")
			args = append(args, t.InputKey)
		}
		if t.To.Terminal() {
			set = append(set, "completed = ?", "lease_owner = ''", "lease_expires_at = NULL")
			args = append(args, now)
		}
		where := "id = ? AND state = ?"
		args = append(args, t.ID, string(t.From))
		if t.Owner != "" {
			where += " AND lease_owner = ?"
			args = append(args, t.Owner)
		}
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE batch_jobs SET `+strings.Join(set, ", ")+` WHERE `+where), args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := getBatchTx(ctx, tx, t.ID); err != nil {
				return err
			}
			return domain.Errorf(domain.Aborted, "batch job %q is no longer %s", t.ID, t.From)
		}
		if t.To == domain.BatchCancelled {
			if err := cancelPendingBatchJobs(ctx, tx, t.ID, now); err != nil {
				return err
			}
		}
		if t.Webhook != nil {
			if err := EnqueueWebhookTx(ctx, tx, t.Webhook); err != nil {
				return err
			}
		}
		out, err = getBatchTx(ctx, tx, t.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetBatchInput records a new input file (see domain.BatchStore). Codes:
// FAILED_PRECONDITION, NOT_FOUND; UNAVAILABLE.
func (s *BatchJobs) SetBatchInput(ctx context.Context, id, key string, now time.Time) (string, error) {
	now = StoredTime(now)
	var previous string
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var r batchRow
		if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+batchColumns+` FROM batch_jobs WHERE id = ?`+s.db.forUpdate()), id); err != nil {
			return describe(TranslateError(err), domain.NotFound, "batch job %q not found", id)
		}
		st := domain.BatchState(r.State)
		if st != domain.BatchInitialized && st != domain.BatchQueued {
			return domain.Errorf(domain.FailedPrecondition, "batch job %q is %s: its input file can no longer be replaced", id, st)
		}
		res, err := tx.ExecContext(ctx, tx.Rebind(`
			UPDATE batch_jobs SET state = 'queued', input_key = ?, updated = ?
			WHERE id = ? AND state = ?`), key, now, id, r.State)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.FailedPrecondition, "batch job %q changed state; retry the upload", id)
		}
		previous = r.InputKey
		return nil
	})
	return previous, err
}

// ClaimBatch leases one worked batch (see domain.BatchStore). Codes:
// NOT_FOUND (none), UNAVAILABLE.
func (s *BatchJobs) ClaimBatch(ctx context.Context, owner string, now, until time.Time) (*domain.BatchJob, error) {
	now, until = StoredTime(now), StoredTime(until)
	const claimable = `state NOT IN ('initialized', 'completed', 'error', 'cancelled')
		AND (lease_owner = '' OR lease_expires_at IS NULL OR lease_expires_at < ?)`
	// A cheap read first, so idle workers take no write lock.
	var any []string
	if err := s.db.SelectContext(ctx, &any, s.db.Rebind(`SELECT id FROM batch_jobs WHERE `+claimable+` LIMIT 1`), now); err != nil {
		return nil, TranslateError(err)
	}
	if len(any) == 0 {
		return nil, domain.Errorf(domain.NotFound, "no batch job to work on")
	}
	lock := ""
	if s.db.Dialect == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var out *domain.BatchJob
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var ids []string
		if err := tx.SelectContext(ctx, &ids, tx.Rebind(`SELECT id FROM batch_jobs WHERE `+claimable+`
			ORDER BY created, id LIMIT 1`+lock), now); err != nil {
			return err
		}
		if len(ids) == 0 {
			return domain.Errorf(domain.NotFound, "no batch job to work on")
		}
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE batch_jobs SET lease_owner = ?, lease_expires_at = ?
			WHERE id = ? AND `+claimable), owner, until, ids[0], now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "no batch job to work on")
		}
		out, err = getBatchTx(ctx, tx, ids[0])
		return err
	})
	return out, err
}

// RenewBatchLease extends owner's lease. Codes: ABORTED; UNAVAILABLE.
func (s *BatchJobs) RenewBatchLease(ctx context.Context, id, owner string, until, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE batch_jobs SET lease_expires_at = ?
			WHERE id = ? AND lease_owner = ? AND state NOT IN ('completed', 'error', 'cancelled')`),
			StoredTime(until), id, owner)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.Aborted, "batch job %q is no longer leased to %s", id, owner)
		}
		return nil
	})
}

// ReleaseBatch clears owner's lease. Codes: UNAVAILABLE.
func (s *BatchJobs) ReleaseBatch(ctx context.Context, id, owner string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE batch_jobs SET lease_owner = '', lease_expires_at = NULL
			WHERE id = ? AND lease_owner = ?`), id, owner)
		return err
	})
}

// SetBatchProgress writes the counts. Codes: ABORTED; UNAVAILABLE.
func (s *BatchJobs) SetBatchProgress(ctx context.Context, id, owner string, state domain.BatchState, processed, failed int, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE batch_jobs SET processed_count = ?, failed_count = ?, updated = ?
			WHERE id = ? AND state = ? AND lease_owner = ?`),
			processed, failed, StoredTime(now), id, string(state), owner)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.Aborted, "batch job %q is no longer %s under %s", id, state, owner)
		}
		return nil
	})
}

// ListAwaitingUpload returns initialized batches created after since.
// Codes: UNAVAILABLE.
func (s *BatchJobs) ListAwaitingUpload(ctx context.Context, since time.Time, limit int) ([]*domain.BatchJob, error) {
	var rows []batchRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+batchColumns+` FROM batch_jobs
		WHERE state = 'initialized' AND created > ? ORDER BY created, id LIMIT ?`), StoredTime(since), limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.BatchJob, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}
