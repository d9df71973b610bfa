package persistence

// Deletion of the retained content of review items (docs/review.md,
// "Retained content"), in batches: each a short transaction of its own, so
// that a sweep over many items never holds one long statement's locks.

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// reviewContentBatch is the most items one step of ExpireReviewContent
// reads or clears.
const reviewContentBatch = 1000

// ExpireReviewContent implements domain.ReviewStore: first the content whose
// time came (review_items_due_content_idx), then that of items whose job
// is gone, found by walking the items that still hold content in id order
// (review_items_holding_content_idx) and looking their jobs up by id.
func (s *Review) ExpireReviewContent(ctx context.Context, now time.Time) (int64, error) {
	total, err := s.clearSelected(ctx, dueContentSQL, StoredTime(now))
	if err != nil {
		return total, err
	}
	for after := ""; ; {
		var items []struct {
			ID    string `db:"id"`
			JobID string `db:"job_id"`
		}
		err := s.db.SelectContext(ctx, &items, s.db.Rebind(holdingContentSQL), after, reviewContentBatch)
		if err != nil || len(items) == 0 {
			return total, TranslateError(err)
		}
		jobIDs := make([]string, 0, len(items))
		for _, it := range items {
			jobIDs = append(jobIDs, it.JobID)
		}
		q, args, err := sqlx.In(`SELECT id FROM jobs WHERE id IN (?)`, jobIDs)
		if err != nil {
			return total, err
		}
		var present []string
		if err := s.db.SelectContext(ctx, &present, s.db.Rebind(q), args...); err != nil {
			return total, TranslateError(err)
		}
		exists := make(map[string]bool, len(present))
		for _, id := range present {
			exists[id] = true
		}
		var gone []string
		for _, it := range items {
			if !exists[it.JobID] {
				gone = append(gone, it.ID)
			}
		}
		n, err := s.clearContent(ctx, gone)
		total += n
		if err != nil {
			return total, err
		}
		if len(items) < reviewContentBatch {
			return total, nil
		}
		after = items[len(items)-1].ID
	}
}

// dueContentSQL reads the items whose content is due at a time.
const dueContentSQL = `SELECT id FROM review_items WHERE content_expires_at <= ? AND content IS NOT NULL LIMIT ?`

// holdingContentSQL reads the next items after an id that still hold
// content, with their jobs.
const holdingContentSQL = `SELECT id, job_id FROM review_items WHERE content IS NOT NULL AND id > ? ORDER BY id LIMIT ?`

// clearSelected clears the content of the items query selects (its
// arguments args, then a LIMIT), a batch at a time, until a read selects
// fewer than a batch; the items cleared.
func (s *Review) clearSelected(ctx context.Context, query string, args ...any) (int64, error) {
	args = append(args[:len(args):len(args)], reviewContentBatch)
	var total int64
	for {
		var ids []string
		if err := s.db.SelectContext(ctx, &ids, s.db.Rebind(query), args...); err != nil {
			return total, TranslateError(err)
		}
		n, err := s.clearContent(ctx, ids)
		total += n
		if err != nil || len(ids) < reviewContentBatch {
			return total, err
		}
	}
}

// clearContent deletes the content of the items ids; the items cleared.
func (s *Review) clearContent(ctx context.Context, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	// The blobs go first: an item whose blob could not be deleted keeps
	// its key, and the next sweep tries again. An item moved to the blob
	// store after this read keeps its content until then too.
	keys, err := s.deleteContentBlobs(ctx, ids)
	if err != nil {
		return 0, err
	}
	q := `UPDATE review_items SET content = NULL, content_blob = NULL
		WHERE id IN (?) AND content IS NOT NULL AND (content_blob IS NULL OR content_blob = ''`
	args := []any{ids}
	if len(keys) > 0 {
		q += ` OR content_blob IN (?)`
		args = append(args, keys)
	}
	q, args, err = sqlx.In(q+`)`, args...)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(q), args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, TranslateError(err)
}
