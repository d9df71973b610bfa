package persistence

// Claims of review items (docs/review.md): claiming the next open item,
// renewing a claim and giving it back. The claim is one UPDATE of the next
// open item, whose row is picked with FOR UPDATE SKIP LOCKED on PostgreSQL
// (concurrent claims take different rows without waiting) and under the
// single writer of InTx on SQLite.

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// ClaimReviewItem implements domain.ReviewStore: the next open item by
// queue priority (highest first), SLA deadline (earliest first, none
// last), position (oldest first; a skip moves it to the back), id.
func (s *Review) ClaimReviewItem(ctx context.Context, accountID, queueID string, c domain.ReviewClaim) (*domain.ReviewItem, error) {
	now, exp := StoredTime(c.Now), StoredTime(c.Expires)
	pick := `SELECT id FROM review_items WHERE account_id = ? AND ` + reviewOpen
	args := []any{c.Token, c.By, exp, accountID, now}
	if queueID != "" {
		pick += ` AND queue_id = ?`
		args = append(args, queueID)
	}
	pick += ` ORDER BY queue_priority DESC, sla_deadline IS NULL, sla_deadline, position, id LIMIT 1`
	if s.db.Dialect == Postgres {
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	var r reviewItemRow
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &r, tx.Rebind(`UPDATE review_items SET state = 'claimed', claim_token = ?, claimed_by = ?, claim_expires_at = ?
			WHERE id = (`+pick+`) RETURNING `+reviewItemColumns), args...)
	})
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "no open review item")
	}
	return s.itemToDomain(&r, now)
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
	return s.itemToDomain(r, now)
}

// ReleaseReviewClaim implements domain.ReviewStore; skip moves the item
// behind the queue's other open items.
func (s *Review) ReleaseReviewClaim(ctx context.Context, accountID, id, token string, now time.Time, skip bool) error {
	now = StoredTime(now)
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
