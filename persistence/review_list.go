package persistence

// Pages of a queue's review items (docs/review.md#claims). Each item
// carries its retained content, and an image's may be 20 MiB: a page stops
// before its content would pass a byte budget, and the contents kept in
// the blob store are read a few at a time.

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/contenteval/contenteval/domain"
)

// reviewListBlobReads bounds the blob store reads of one page at once.
const reviewListBlobReads = 8

// reviewItemSize is the size of an item's sealed content, as counted
// against a page's byte budget; items written before content_size existed
// hold their content in the row.
const reviewItemSize = `COALESCE(content_size, LENGTH(content), 0)`

// ListReviewItems implements domain.ReviewStore: up to limit items of the
// queue in state after the cursor, oldest first, and whether more follow.
// It stops early rather than return more than maxBytes of content (at
// least one item, so that any item can be listed): the sizes are read
// first, the items that fit after.
func (s *Review) ListReviewItems(ctx context.Context, accountID, queueID string, state domain.ReviewItemState, now time.Time,
	after *domain.ReviewItemCursor, limit, maxBytes int) ([]*domain.ReviewItem, bool, error) {
	now = StoredTime(now)
	where := ` FROM review_items WHERE queue_id = ? AND account_id = ?`
	args := []any{queueID, accountID}
	switch state {
	case domain.ReviewOpen:
		where += ` AND ` + reviewOpen
		args = append(args, now)
	case domain.ReviewClaimed:
		where += ` AND state = 'claimed' AND claim_expires_at > ?`
		args = append(args, now)
	case domain.ReviewDecided:
		where += ` AND state = 'decided'`
	}
	if after != nil {
		c := StoredTime(after.Created)
		where += ` AND (created > ? OR (created = ? AND id > ?))`
		args = append(args, c, c, after.ID)
	}
	const order = ` ORDER BY created, id LIMIT ?`
	var sizes []int64
	if err := s.db.SelectContext(ctx, &sizes, s.db.Rebind(`SELECT `+reviewItemSize+where+order), append(args, limit+1)...); err != nil || len(sizes) == 0 {
		return nil, false, TranslateError(err)
	}
	n := withinBudget(sizes, limit, maxBytes)
	var rows []reviewItemRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+reviewItemColumns+where+order), append(args, n)...); err != nil {
		return nil, false, TranslateError(err)
	}
	items, err := s.itemsToDomain(ctx, rows, now)
	return items, len(sizes) > n, err
}

// itemsToDomain is itemToDomain of every row, the contents kept in the
// blob store read reviewListBlobReads at a time.
func (s *Review) itemsToDomain(ctx context.Context, rows []reviewItemRow, now time.Time) ([]*domain.ReviewItem, error) {
	out := make([]*domain.ReviewItem, len(rows))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(reviewListBlobReads)
	for i := range rows {
		g.Go(func() error {
			var err error
			out[i], err = s.itemToDomain(ctx, &rows[i], now)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
