package persistence

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/traces"
	"github.com/jmoiron/sqlx"
)

// Webhooks implements domain.WebhookStore: the outbox table.
type Webhooks struct{ db *DB }

var _ domain.WebhookStore = (*Webhooks)(nil)

// NewWebhooks returns the outbox store.
func NewWebhooks(db *DB) *Webhooks { return &Webhooks{db: db} }

const webhookColumns = `id, account_id, url, headers, type, subject_kind, subject_id, attempts,
	next_attempt_at, created, delivered_at, failed_at, last_error, trace_parent, trace_state`

type webhookRow struct {
	ID            string       `db:"id"`
	AccountID     string       `db:"account_id"`
	URL           string       `db:"url"`
	Headers       string       `db:"headers"`
	Type          string       `db:"type"`
	SubjectKind   string       `db:"subject_kind"`
	SubjectID     string       `db:"subject_id"`
	Attempts      int          `db:"attempts"`
	NextAttemptAt sql.NullTime `db:"next_attempt_at"`
	Created       time.Time    `db:"created"`
	DeliveredAt   *time.Time   `db:"delivered_at"`
	FailedAt      *time.Time   `db:"failed_at"`
	LastError     string       `db:"last_error"`
	TraceParent   string       `db:"trace_parent"`
	TraceState    string       `db:"trace_state"`
}

func (r *webhookRow) toDomain() *domain.WebhookEvent {
	e := &domain.WebhookEvent{
		ID: r.ID, AccountID: r.AccountID, URL: r.URL, Type: r.Type, SubjectKind: r.SubjectKind,
		SubjectID: r.SubjectID, Attempts: r.Attempts, Created: r.Created.UTC(),
		DeliveredAt: utcPtr(r.DeliveredAt), FailedAt: utcPtr(r.FailedAt), LastError: r.LastError,
		TraceParent: r.TraceParent, TraceState: r.TraceState,
	}
	if r.NextAttemptAt.Valid {
		e.NextAttemptAt = r.NextAttemptAt.Time.UTC()
	}
	_ = json.Unmarshal([]byte(r.Headers), &e.Headers)
	return e
}

// EnqueueWebhook inserts a pending event due at e.NextAttemptAt (Created when
// unset). Codes: ALREADY_EXISTS, NOT_FOUND (account); UNAVAILABLE.
func (s *Webhooks) EnqueueWebhook(ctx context.Context, e *domain.WebhookEvent) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error { return EnqueueWebhookTx(ctx, tx, e) })
}

// EnqueueWebhookTx inserts the event within tx, so the stores of jobs and
// batch jobs can write it in the transaction of the state change it reports.
// An event without a trace context gets ctx's: the one of the request or
// run that reached the state change.
func EnqueueWebhookTx(ctx context.Context, tx *sqlx.Tx, e *domain.WebhookEvent) error {
	if e.TraceParent == "" {
		e.TraceParent, e.TraceState = traces.Context(ctx)
	}
	e.Created = StoredTime(e.Created)
	if e.NextAttemptAt.IsZero() {
		e.NextAttemptAt = e.Created
	}
	e.NextAttemptAt = StoredTime(e.NextAttemptAt)
	headers, err := json.Marshal(e.Headers)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, tx.Rebind(`
		INSERT INTO webhook_events (id, account_id, url, headers, type, subject_kind, subject_id, next_attempt_at, created,
		                            trace_parent, trace_state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		e.ID, e.AccountID, e.URL, string(headers), e.Type, e.SubjectKind, e.SubjectID, e.NextAttemptAt, e.Created,
		e.TraceParent, e.TraceState)
	return describe(TranslateError(err), domain.AlreadyExists, "webhook event %q already exists", e.ID)
}

// ClaimWebhooks leases due events to owner. On PostgreSQL concurrent
// deliverers skip each other's rows (SKIP LOCKED); on SQLite the write
// transaction serializes them. Codes: UNAVAILABLE, CANCELED.
func (s *Webhooks) ClaimWebhooks(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*domain.WebhookEvent, error) {
	now = StoredTime(now)
	until := StoredTime(now.Add(lease))
	lock := ""
	if s.db.Dialect == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var out []*domain.WebhookEvent
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var rows []webhookRow
		err := tx.SelectContext(ctx, &rows, tx.Rebind(`
			SELECT `+webhookColumns+` FROM webhook_events
			WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?
			  AND (lease_until IS NULL OR lease_until < ?)
			ORDER BY next_attempt_at, id LIMIT ?`+lock), now, now, limit)
		if err != nil {
			return TranslateError(err)
		}
		for i := range rows {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE webhook_events SET lease_owner = ?, lease_until = ? WHERE id = ?`),
				owner, until, rows[i].ID); err != nil {
				return TranslateError(err)
			}
			out = append(out, rows[i].toDomain())
		}
		return nil
	})
	return out, err
}

// FinishWebhook records an attempt; the UPDATE is guarded by the lease, so
// a deliverer whose lease expired (and whose event another claimed) changes
// nothing. Codes: ABORTED (lease lost); UNAVAILABLE.
func (s *Webhooks) FinishWebhook(ctx context.Context, id, owner string, a domain.WebhookAttempt) error {
	var next any
	if a.DeliveredAt == nil && a.FailedAt == nil {
		next = StoredTime(a.Next)
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`
			UPDATE webhook_events
			SET attempts = attempts + 1, delivered_at = ?, failed_at = ?, next_attempt_at = ?,
			    last_error = ?, lease_owner = '', lease_until = NULL
			WHERE id = ? AND lease_owner = ? AND delivered_at IS NULL AND failed_at IS NULL`),
			storedTimePtr(a.DeliveredAt), storedTimePtr(a.FailedAt), next, a.Error, id, owner)
		if err != nil {
			return TranslateError(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.Aborted, "webhook event %q is no longer leased to %s", id, owner)
		}
		return nil
	})
}

// GetWebhook returns one event. Codes: NOT_FOUND.
func (s *Webhooks) GetWebhook(ctx context.Context, id string) (*domain.WebhookEvent, error) {
	var r webhookRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+webhookColumns+` FROM webhook_events WHERE id = ?`), id)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "webhook event %q not found", id)
	}
	return r.toDomain(), nil
}
