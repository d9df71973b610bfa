package persistence

// Claims of review items (docs/review.md): claiming the next open item,
// renewing a claim and giving it back. The claim is an UPDATE of the next
// open item, whose row is picked with FOR UPDATE SKIP LOCKED on PostgreSQL
// (concurrent claims take different rows without waiting) and under the
// single writer of InTx on SQLite.

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// ClaimReviewItem implements domain.ReviewStore: the next open item by
// queue priority (highest first), SLA deadline (earliest first, none
// last), position (oldest first; a skip moves it to the back), id.
//
// The next item is the first of two candidates: the first open item, read
// from the head of review_items_next_idx (or review_items_queue_next_idx)
// whatever the number of open items, and the first item whose claim
// expired, of the few claimed ones. One query with both conditions would
// sort every open item of the account on every claim.
func (s *Review) ClaimReviewItem(ctx context.Context, accountID, queueID string, c domain.ReviewClaim) (*domain.ReviewItem, error) {
	now, exp := StoredTime(c.Now), StoredTime(c.Expires)
	var r reviewItemRow
	if s.db.Dialect == Postgres {
		q, args := claimNextSQL(accountID, queueID, now)
		args = append(args, c.Token, c.By, exp, now)
		// Prepared once per connection: planning the statement cost about
		// as much as running it.
		if err := s.db.getPrepared(ctx, &r, q, args...); err != nil {
			return nil, describe(TranslateError(err), domain.NotFound, "no open review item")
		}
		return s.itemToDomain(ctx, &r, now)
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		open, err := s.nextCandidate(ctx, tx, accountID, queueID, `state = 'open'`)
		if err != nil {
			return err
		}
		expired, err := s.nextCandidate(ctx, tx, accountID, queueID, `state = 'claimed' AND claim_expires_at <= ?`, now)
		if err != nil {
			return err
		}
		next := open
		if next == nil || expired != nil && expired.before(next) {
			next = expired
		}
		if next == nil {
			return sql.ErrNoRows
		}
		return tx.GetContext(ctx, &r, tx.Rebind(`UPDATE review_items SET state = 'claimed', claim_token = ?, claimed_by = ?, claim_expires_at = ?
			WHERE id = ? AND `+reviewOpen+` RETURNING `+reviewItemColumns), c.Token, c.By, exp, next.ID, now)
	})
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "no open review item")
	}
	return s.itemToDomain(ctx, &r, now)
}

// claimCandidate is an item that a claim may take, with its place in the
// claim order.
type claimCandidate struct {
	ID          string     `db:"id"`
	Priority    int        `db:"queue_priority"`
	SLADeadline *time.Time `db:"sla_deadline"`
	Position    time.Time  `db:"position"`
}

// before reports whether c comes before d in the claim order.
func (c *claimCandidate) before(d *claimCandidate) bool {
	if c.Priority != d.Priority {
		return c.Priority > d.Priority
	}
	if (c.SLADeadline == nil) != (d.SLADeadline == nil) {
		return c.SLADeadline != nil
	}
	if c.SLADeadline != nil && !c.SLADeadline.Equal(*d.SLADeadline) {
		return c.SLADeadline.Before(*d.SLADeadline)
	}
	if !c.Position.Equal(d.Position) {
		return c.Position.Before(d.Position)
	}
	return c.ID < d.ID
}

// nextCandidate returns the first item of the account (of queueID when
// not "") in the claim order whose state matches cond, locked on
// PostgreSQL (a row another claim holds is skipped); nil for none. The
// ORDER BY spells out the columns of review_items_next_idx and
// review_items_queue_next_idx so that the open items are read from an
// index's head; within one queue the priority is the same for every item.
func (s *Review) nextCandidate(ctx context.Context, tx *sqlx.Tx, accountID, queueID, cond string, condArgs ...any) (*claimCandidate, error) {
	q, args := claimCandidateSQL(s.db.Dialect, accountID, queueID, cond, condArgs)
	var c claimCandidate
	if err := tx.GetContext(ctx, &c, tx.Rebind(q), args...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return nil, err
	}
	return &c, nil
}

// claimCandidateSQL is nextCandidate's query.
func claimCandidateSQL(d Dialect, accountID, queueID, cond string, condArgs []any) (string, []any) {
	q := `SELECT id, queue_priority, sla_deadline, position FROM review_items WHERE account_id = ? AND ` + cond
	args := append([]any{accountID}, condArgs...)
	order := ` ORDER BY queue_priority DESC, sla_deadline IS NULL, sla_deadline, position, id LIMIT 1`
	if queueID != "" {
		q += ` AND queue_id = ?`
		args = append(args, queueID)
		order = ` ORDER BY sla_deadline IS NULL, sla_deadline, position, id LIMIT 1`
	}
	q += order
	if d == Postgres {
		q += ` FOR UPDATE SKIP LOCKED`
	}
	return q, args
}

// claimNextSQL is the claim on PostgreSQL as one statement: both
// candidates locked (SKIP LOCKED) in CTEs, the first of them in the claim
// order updated. One round trip and no explicit transaction: under twenty
// reviewers claiming at once, the BEGIN, two reads, UPDATE and COMMIT of
// the transaction each waited their turn on the connection and the
// server's CPU (bench/results/review.md). The arguments returned are the
// candidates'; the statement then takes the claim's token, reviewer and
// expiry, and now.
func claimNextSQL(accountID, queueID string, now time.Time) (string, []any) {
	open, openArgs := claimCandidateSQL(Postgres, accountID, queueID, `state = 'open'`, nil)
	expired, expiredArgs := claimCandidateSQL(Postgres, accountID, queueID, `state = 'claimed' AND claim_expires_at <= ?`, []any{now})
	q := `WITH o AS (` + open + `), e AS (` + expired + `)
		UPDATE review_items SET state = 'claimed', claim_token = ?, claimed_by = ?, claim_expires_at = ?
		WHERE id = (SELECT id FROM (SELECT * FROM o UNION ALL SELECT * FROM e) c
			ORDER BY queue_priority DESC, sla_deadline IS NULL, sla_deadline, position, id LIMIT 1)
		AND ` + reviewOpen + ` RETURNING ` + reviewItemColumns
	return q, append(openArgs, expiredArgs...)
}

// heldItem checks, in tx, that token holds the item's claim at now.
// Codes: NOT_FOUND, FAILED_PRECONDITION (decided), ABORTED (another or
// an expired claim).
func (s *Review) heldItem(ctx context.Context, tx *sqlx.Tx, accountID, id, token string, now time.Time) (*reviewItemRow, error) {
	var r reviewItemRow
	if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+reviewItemColumns+` FROM review_items WHERE id = ? AND account_id = ?`+s.db.forUpdate()), id, accountID); err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "review item %q not found", id)
	}
	switch {
	case r.State == "decided":
		return nil, domain.Errorf(domain.FailedPrecondition, "review item %q is already decided", id)
	case r.State != "claimed" || r.ClaimToken == "" || r.ClaimToken != token || r.ClaimExpiresAt == nil || !r.ClaimExpiresAt.After(now):
		return nil, domain.Errorf(domain.Aborted, "the claim token of review item %q is stale: the claim expired or was given back", id)
	}
	return &r, nil
}

// RenewReviewClaim implements domain.ReviewStore.
func (s *Review) RenewReviewClaim(ctx context.Context, accountID, id, token string, now, expires time.Time) (*domain.ReviewItem, error) {
	now, expires = StoredTime(now), StoredTime(expires)
	var r *reviewItemRow
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if r, err = s.heldItem(ctx, tx, accountID, id, token, now); err != nil {
			return err
		}
		r.ClaimExpiresAt = &expires
		_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE review_items SET claim_expires_at = ? WHERE id = ?`), expires, id)
		return err
	})
	if err != nil {
		return nil, TranslateError(err)
	}
	return s.itemToDomain(ctx, r, now)
}

// releaseLiveClaimSQL gives back an item under a live claim of a token.
const releaseLiveClaimSQL = `UPDATE review_items SET state = 'open', claim_token = '', claimed_by = '',
	claim_expires_at = NULL WHERE id = ? AND account_id = ? AND state = 'claimed' AND claim_token = ? AND claim_expires_at > ?`

// ReleaseReviewClaim implements domain.ReviewStore; skip moves the item
// behind the queue's other open items.
func (s *Review) ReleaseReviewClaim(ctx context.Context, accountID, id, token string, now time.Time, skip bool) error {
	now = StoredTime(now)
	if s.db.Dialect == Postgres && !skip && token != "" {
		// A release under a live claim, as one statement; anything else
		// (a stale token, a decided item) is told apart by the transaction
		// below.
		st, err := s.db.prepared(ctx, releaseLiveClaimSQL)
		if err != nil {
			return TranslateError(err)
		}
		res, err := st.ExecContext(ctx, id, accountID, token, now)
		if err != nil {
			return TranslateError(err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			return nil
		}
	}
	return TranslateError(s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		r, err := s.heldItem(ctx, tx, accountID, id, token, now)
		if err != nil {
			return err
		}
		pos := r.Position
		if skip {
			// Behind the queue's last item, even one created in the same
			// microsecond.
			var last time.Time
			err := tx.GetContext(ctx, &last, tx.Rebind(`SELECT position FROM review_items WHERE queue_id = ? AND state <> 'decided'
				ORDER BY position DESC LIMIT 1`), r.QueueID)
			if err != nil {
				return err
			}
			pos = now
			if !last.Before(now) {
				pos = last.Add(time.Microsecond)
			}
		}
		_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE review_items SET state = 'open', claim_token = '', claimed_by = '',
			claim_expires_at = NULL, position = ? WHERE id = ?`), pos, id)
		return err
	}))
}
