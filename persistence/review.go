package persistence

// Review queues and items (docs/review.md); their claims are in
// review_claims.go.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// Review implements domain.ReviewStore.
type Review struct{ db *DB }

var _ domain.ReviewStore = (*Review)(nil)

// NewReview returns the review store on db.
func NewReview(db *DB) *Review { return &Review{db: db} }

type reviewQueueRow struct {
	ID            string    `db:"id"`
	AccountID     string    `db:"account_id"`
	Name          string    `db:"name"`
	Description   string    `db:"description"`
	Routes        string    `db:"routes"`
	Priority      int       `db:"priority"`
	SLAMinutes    int       `db:"sla_minutes"`
	WebhookURL    string    `db:"webhook_url"`
	RetentionDays int       `db:"retention_days"`
	Created       time.Time `db:"created"`
	Updated       time.Time `db:"updated"`
}

const reviewQueueColumns = `id, account_id, name, description, routes, priority, sla_minutes, webhook_url, retention_days, created, updated`

func (r *reviewQueueRow) toDomain() (*domain.ReviewQueue, error) {
	q := &domain.ReviewQueue{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Description: r.Description,
		Priority: r.Priority, SLAMinutes: r.SLAMinutes, WebhookURL: r.WebhookURL, RetentionDays: r.RetentionDays,
		Created: r.Created.UTC(), Updated: r.Updated.UTC()}
	if err := json.Unmarshal([]byte(r.Routes), &q.Routes); err != nil {
		return nil, err
	}
	return q, nil
}

// CreateReviewQueue inserts q unless the account has max queues. Codes:
// ALREADY_EXISTS (name), NOT_FOUND (account), FAILED_PRECONDITION (max).
func (s *Review) CreateReviewQueue(ctx context.Context, q *domain.ReviewQueue, max int) error {
	q.Created, q.Updated = StoredTime(q.Created), StoredTime(q.Updated)
	routes, err := json.Marshal(q.Routes)
	if err != nil {
		return err
	}
	defer s.db.review.invalidate(q.AccountID)
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var id string
		if err := tx.GetContext(ctx, &id, tx.Rebind(`SELECT id FROM accounts WHERE id = ?`+s.db.forUpdate()), q.AccountID); err != nil {
			return describe(TranslateError(err), domain.NotFound, "account %q not found", q.AccountID)
		}
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM review_queues WHERE account_id = ?`), q.AccountID); err != nil {
			return err
		}
		if n >= max {
			return domain.Errorf(domain.FailedPrecondition, "the account already has %d review queues, the most allowed", n)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO review_queues (`+reviewQueueColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			q.ID, q.AccountID, q.Name, q.Description, string(routes), q.Priority, q.SLAMinutes, q.WebhookURL, q.RetentionDays, q.Created, q.Updated)
		return err
	})
	return describe(TranslateError(err), domain.AlreadyExists, "review queue %q already exists", q.Name)
}

// GetReviewQueue returns a queue of the account. Codes: NOT_FOUND.
func (s *Review) GetReviewQueue(ctx context.Context, accountID, id string) (*domain.ReviewQueue, error) {
	var r reviewQueueRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+reviewQueueColumns+` FROM review_queues WHERE id = ? AND account_id = ?`), id, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "review queue %q not found", id)
	}
	return r.toDomain()
}

// ListReviewQueues returns the account's queues by priority (highest
// first), then name.
func (s *Review) ListReviewQueues(ctx context.Context, accountID string) ([]*domain.ReviewQueue, error) {
	return reviewQueuesOf(ctx, s.db.DB, accountID)
}

func reviewQueuesOf(ctx context.Context, q sqlx.QueryerContext, accountID string) ([]*domain.ReviewQueue, error) {
	var rows []reviewQueueRow
	if err := sqlx.SelectContext(ctx, q, &rows, sqlx.Rebind(bindOf(q), `SELECT `+reviewQueueColumns+` FROM review_queues
		WHERE account_id = ? ORDER BY priority DESC, name`), accountID); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.ReviewQueue, len(rows))
	for i := range rows {
		var err error
		if out[i], err = rows[i].toDomain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bindOf is the bind type of a sqlx handle.
func bindOf(q sqlx.QueryerContext) int {
	switch h := q.(type) {
	case *sqlx.Tx:
		return sqlx.BindType(h.DriverName())
	case *sqlx.DB:
		return sqlx.BindType(h.DriverName())
	}
	return sqlx.QUESTION
}

// UpdateReviewQueue replaces a queue's fields (not its id, account or
// created); its items take its new priority. Codes: NOT_FOUND,
// ALREADY_EXISTS (name).
func (s *Review) UpdateReviewQueue(ctx context.Context, q *domain.ReviewQueue) error {
	q.Updated = StoredTime(q.Updated)
	routes, err := json.Marshal(q.Routes)
	if err != nil {
		return err
	}
	defer s.db.review.invalidate(q.AccountID)
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := guardedRow(ctx, tx, `UPDATE review_queues SET name = ?, description = ?, routes = ?, priority = ?, sla_minutes = ?,
			webhook_url = ?, retention_days = ?, updated = ? WHERE id = ? AND account_id = ?`,
			q.Name, q.Description, string(routes), q.Priority, q.SLAMinutes, q.WebhookURL, q.RetentionDays, q.Updated, q.ID, q.AccountID); err != nil {
			return describe(err, domain.NotFound, "review queue %q not found", q.ID)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE review_items SET queue_priority = ? WHERE queue_id = ? AND state <> 'decided'`), q.Priority, q.ID)
		return err
	})
	return describe(TranslateError(err), domain.AlreadyExists, "review queue %q already exists", q.Name)
}

// guardedRow runs an UPDATE or DELETE that must touch a row. Codes:
// NOT_FOUND when it touched none.
func guardedRow(ctx context.Context, tx *sqlx.Tx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, tx.Rebind(query), args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(err, domain.Errorf(domain.NotFound, "not found"))
	}
	return nil
}

// DeleteReviewQueue deletes a queue with its items (and their content).
// Codes: NOT_FOUND.
func (s *Review) DeleteReviewQueue(ctx context.Context, accountID, id string) error {
	defer s.db.review.invalidate(accountID)
	// The content first, in batches (its blobs with it): the items go in
	// one statement below.
	if _, err := s.clearSelected(ctx, `SELECT id FROM review_items WHERE queue_id = ? AND account_id = ? AND content IS NOT NULL LIMIT ?`, id, accountID); err != nil {
		return err
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		// Explicitly, not by the cascade: SQLite enforces foreign keys only
		// when told to per connection.
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM review_decisions WHERE queue_id = ? AND account_id = ?`), id, accountID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM review_items WHERE queue_id = ? AND account_id = ?`), id, accountID); err != nil {
			return err
		}
		return guardedRow(ctx, tx, `DELETE FROM review_queues WHERE id = ? AND account_id = ?`, id, accountID)
	})
	return describe(TranslateError(err), domain.NotFound, "review queue %q not found", id)
}

type reviewItemRow struct {
	ID             string     `db:"id"`
	AccountID      string     `db:"account_id"`
	QueueID        string     `db:"queue_id"`
	JobID          string     `db:"job_id"`
	JobResultID    string     `db:"job_result_id"`
	Machine        string     `db:"machine"`
	State          string     `db:"state"`
	SLADeadline    *time.Time `db:"sla_deadline"`
	Position       time.Time  `db:"position"`
	ClaimToken     string     `db:"claim_token"`
	ClaimedBy      string     `db:"claimed_by"`
	ClaimExpiresAt *time.Time `db:"claim_expires_at"`
	Decision       string     `db:"decision"`
	Content        []byte     `db:"content"`
	ContentBlob    *string    `db:"content_blob"`
	ContentExpires *time.Time `db:"content_expires_at"`
	Created        time.Time  `db:"created"`
}

const reviewItemColumns = `id, account_id, queue_id, job_id, job_result_id, machine, state, sla_deadline, position,
	claim_token, claimed_by, claim_expires_at, decision, content, content_blob, content_expires_at, created`

// reviewOpen is the condition of an open item at the bind argument now:
// open, or claimed with its claim expired.
const reviewOpen = `(state = 'open' OR (state = 'claimed' AND claim_expires_at <= ?))`

func (s *Review) itemToDomain(ctx context.Context, r *reviewItemRow, now time.Time) (*domain.ReviewItem, error) {
	it := &domain.ReviewItem{ID: r.ID, AccountID: r.AccountID, QueueID: r.QueueID, JobID: r.JobID, JobResultID: r.JobResultID,
		SLADeadline: utcPtr(r.SLADeadline), Created: r.Created.UTC(), ContentExpiresAt: utcPtr(r.ContentExpires)}
	if err := json.Unmarshal([]byte(r.Machine), &it.Machine); err != nil {
		return nil, err
	}
	switch {
	case r.State == "decided":
		it.State = domain.ReviewDecided
		it.Decision = &domain.ReviewDecision{}
		if err := json.Unmarshal([]byte(r.Decision), it.Decision); err != nil {
			return nil, err
		}
	case r.State == "claimed" && r.ClaimExpiresAt != nil && r.ClaimExpiresAt.After(now):
		it.State, it.ClaimedBy, it.ClaimToken, it.ClaimExpiresAt = domain.ReviewClaimed, r.ClaimedBy, r.ClaimToken, utcPtr(r.ClaimExpiresAt)
	default:
		it.State = domain.ReviewOpen
	}
	sealed, err := s.sealedContent(ctx, r)
	if err != nil || sealed == nil {
		return it, err
	}
	if it.Content, err = s.db.reviewBox().openContent(r.AccountID, sealed); err != nil {
		return nil, err
	}
	return it, nil
}

// GetReviewItem implements domain.ReviewStore. Codes: NOT_FOUND.
func (s *Review) GetReviewItem(ctx context.Context, accountID, id string, now time.Time) (*domain.ReviewItem, error) {
	var r reviewItemRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+reviewItemColumns+` FROM review_items WHERE id = ? AND account_id = ?`), id, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "review item %q not found", id)
	}
	return s.itemToDomain(ctx, &r, StoredTime(now))
}

// DecideReviewItem implements domain.ReviewStore: the decision, its audit
// rows (one per label, with the machine's outcome), the content's
// deletion time and the queue's webhook, in one transaction.
func (s *Review) DecideReviewItem(ctx context.Context, w *domain.ReviewDecisionWrite) (*domain.ReviewItem, error) {
	d := w.Decision
	d.Decided = StoredTime(d.Decided)
	body, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	expires := StoredTime(w.ContentExpiresAt)
	var r *reviewItemRow
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if r, err = s.heldItem(ctx, tx, w.AccountID, w.ItemID, w.ClaimToken, d.Decided); err != nil {
			return err
		}
		var machine []domain.ReviewMatch
		if err := json.Unmarshal([]byte(r.Machine), &machine); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE review_items SET state = 'decided', claim_token = '', claim_expires_at = NULL,
			decided_by = ?, decided_key_id = ?, decided_at = ?, decision = ?, content_expires_at = ? WHERE id = ?`),
			d.DecidedBy, d.KeyID, d.Decided, string(body), expires, r.ID); err != nil {
			return err
		}
		for _, l := range d.Labels {
			said := string(domainOutcomeFalse)
			for _, m := range machine {
				if m.Label == l.Label {
					said = m.Outcome
				}
			}
			if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO review_decisions (review_item_id, account_id, queue_id, label,
				machine_outcome, outcome, decided_by, key_id, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				r.ID, r.AccountID, r.QueueID, l.Label, said, l.Outcome, d.DecidedBy, d.KeyID, d.Decided); err != nil {
				return err
			}
		}
		if w.Webhook != nil {
			return EnqueueWebhookTx(ctx, tx, w.Webhook)
		}
		return nil
	})
	if err != nil {
		return nil, TranslateError(err)
	}
	r.State, r.Decision, r.ContentExpires = "decided", string(body), &expires
	return s.itemToDomain(ctx, r, d.Decided)
}

// domainOutcomeFalse is what the machine said of a label the routed
// result did not match: the reviewer may decide any label of the report.
const domainOutcomeFalse = "OUTCOME_FALSE"

// ReviewStats implements domain.ReviewStore. Open, claimed and the oldest
// open item are as of now; decisions and breaches count those in r.
func (s *Review) ReviewStats(ctx context.Context, accountID, queueID string, now time.Time, r domain.TimeRange) (*domain.ReviewStats, error) {
	now = StoredTime(now)
	var c struct {
		Open     int64    `db:"open"`
		Claimed  int64    `db:"claimed"`
		Breaches int64    `db:"breaches"`
		Oldest   scanTime `db:"oldest"`
	}
	err := s.db.GetContext(ctx, &c, s.db.Rebind(`SELECT
		COALESCE(SUM(CASE WHEN `+reviewOpen+` THEN 1 ELSE 0 END), 0) AS open,
		COALESCE(SUM(CASE WHEN state = 'claimed' AND claim_expires_at > ? THEN 1 ELSE 0 END), 0) AS claimed,
		COALESCE(SUM(CASE WHEN sla_deadline < ? THEN 1 ELSE 0 END), 0) AS breaches,
		MIN(CASE WHEN `+reviewOpen+` THEN created END) AS oldest
		FROM review_items WHERE queue_id = ? AND account_id = ? AND state <> 'decided'`), now, now, now, now, queueID, accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	st := &domain.ReviewStats{Open: c.Open, Claimed: c.Claimed, SLABreaches: c.Breaches}
	if !c.Oldest.IsZero() {
		st.OldestOpen = &c.Oldest.Time
	}
	where, args := []string{"queue_id = ?", "account_id = ?", "state = 'decided'"}, []any{queueID, accountID}
	rangeSQL("decided_at", r, &where, &args)
	var d struct {
		Decided  int64 `db:"decided"`
		Breaches int64 `db:"breaches"`
	}
	if err := s.db.GetContext(ctx, &d, s.db.Rebind(`SELECT COUNT(*) AS decided,
		COALESCE(SUM(CASE WHEN decided_at > sla_deadline THEN 1 ELSE 0 END), 0) AS breaches
		FROM review_items WHERE `+joinAnd(where)), args...); err != nil {
		return nil, TranslateError(err)
	}
	st.Decided, st.SLABreaches = d.Decided, st.SLABreaches+d.Breaches
	where, args = []string{"queue_id = ?", "account_id = ?"}, []any{queueID, accountID}
	rangeSQL("decided_at", r, &where, &args)
	var rows []struct {
		Label      string `db:"label"`
		Decided    int64  `db:"decided"`
		Overturned int64  `db:"overturned"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT label, COUNT(*) AS decided,
		COALESCE(SUM(CASE WHEN outcome <> machine_outcome THEN 1 ELSE 0 END), 0) AS overturned
		FROM review_decisions WHERE `+joinAnd(where)+` GROUP BY label ORDER BY label`), args...); err != nil {
		return nil, TranslateError(err)
	}
	for _, row := range rows {
		st.Labels = append(st.Labels, domain.ReviewLabelStats{Label: row.Label, Decided: row.Decided, Overturned: row.Overturned})
	}
	return st, nil
}

func joinAnd(where []string) string {
	out := ""
	for i, w := range where {
		if i > 0 {
			out += " AND "
		}
		out += w
	}
	return out
}

// ReviewItemsOfJob implements domain.ReviewStore.
func (s *Review) ReviewItemsOfJob(ctx context.Context, accountID, jobID string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.db.Rebind(`SELECT COUNT(*) FROM review_items WHERE account_id = ? AND job_id = ?`), accountID, jobID)
	return n > 0, TranslateError(err)
}

// ReviewGauges implements domain.ReviewStore.
func (s *Review) ReviewGauges(ctx context.Context, now time.Time) ([]domain.ReviewGauge, error) {
	now = StoredTime(now)
	var rows []struct {
		AccountID string   `db:"account_id"`
		QueueID   string   `db:"queue_id"`
		Name      string   `db:"name"`
		Open      int64    `db:"open"`
		Oldest    scanTime `db:"oldest"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT q.account_id, q.id AS queue_id, q.name,
		COUNT(i.id) AS open, MIN(i.created) AS oldest
		FROM review_queues q LEFT JOIN review_items i ON i.queue_id = q.id
		  AND (i.state = 'open' OR (i.state = 'claimed' AND i.claim_expires_at <= ?))
		GROUP BY q.account_id, q.id, q.name ORDER BY q.account_id, q.id`), now)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]domain.ReviewGauge, len(rows))
	for i, r := range rows {
		out[i] = domain.ReviewGauge{AccountID: r.AccountID, QueueID: r.QueueID, Name: r.Name, Open: r.Open}
		if !r.Oldest.IsZero() {
			out[i].OldestOpen = &r.Oldest.Time
		}
	}
	return out, nil
}
