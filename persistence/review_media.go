package persistence

// Retained review content that is not text (images, media bytes, and the
// URLs of images and media) lives in the blob store (docs/review.md,
// "Retained content"). An item is made in the transaction that records
// its result, which must not wait on an object store: its content is
// sealed into the row there, as text is, and marked to be moved
// (content_blob empty). OffloadReviewContent then copies the sealed bytes,
// as they are, to the blob store and empties the row (content_blob the
// key). The blob is the sealed form: AES-GCM under the server's key with
// the account as additional data, so the store never holds plaintext.
// Until it is moved, and if the store is down, the content is read from
// the row.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// reviewOffloadBatch is the most items one read of OffloadReviewContent
// moves.
const reviewOffloadBatch = 100

// maxSealedReviewContent bounds what a read of a moved item takes from the
// blob store: more than any content item the API accepts, sealed.
const maxSealedReviewContent = 1 << 30

// KeepReviewMediaIn makes the review content that is not text move to
// blobs; without it, all of it stays in the rows. Atomic: a server opening
// on a DB another one's workers use (two replicas in one test) sets it.
func (db *DB) KeepReviewMediaIn(blobs domain.BlobStore) { db.reviewBlobs.Store(&blobs) }

// reviewBlobStore is the store of KeepReviewMediaIn, nil for none.
func (db *DB) reviewBlobStore() domain.BlobStore {
	if p := db.reviewBlobs.Load(); p != nil {
		return *p
	}
	return nil
}

// reviewContentKey is the blob store key of an item's content: the item's
// id, which the service makes (a UUID), never a client.
func reviewContentKey(itemID string) string { return "review-content/" + itemID }

// reviewContentBlob is what a new item's content_blob column holds: the
// empty string (to be moved) for content that is not text when a blob
// store is set, NULL otherwise.
func (db *DB) reviewContentBlob(c *domain.ContentItem) any {
	if db.reviewBlobStore() == nil || c.Kind == domain.ContentText {
		return nil
	}
	return ""
}

// OffloadReviewContent moves the sealed content of the items marked to be
// moved to the blob store, in batches; the number moved. Each item is its
// own short transaction, after its blob is written: an item whose content
// was deleted (or moved by another replica) in the meantime keeps what it
// has, and a blob nobody refers to is deleted again.
func (s *Review) OffloadReviewContent(ctx context.Context) (int, error) {
	blobs := s.db.reviewBlobStore()
	if blobs == nil {
		return 0, nil
	}
	moved := 0
	for {
		var rows []struct {
			ID      string `db:"id"`
			Content []byte `db:"content"`
		}
		err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT id, content FROM review_items WHERE content_blob = '' LIMIT ?`), reviewOffloadBatch)
		if err != nil {
			return moved, TranslateError(err)
		}
		for _, r := range rows {
			ok, err := s.offloadOne(ctx, blobs, r.ID, r.Content)
			if err != nil {
				return moved, err
			}
			if ok {
				moved++
			}
		}
		if len(rows) < reviewOffloadBatch {
			return moved, nil
		}
	}
}

// offloadOne moves one item's sealed content; ok is false when the item
// no longer had it to move.
func (s *Review) offloadOne(ctx context.Context, blobs domain.BlobStore, id string, sealed []byte) (bool, error) {
	key := reviewContentKey(id)
	if sealed == nil {
		// Deleted since the read: nothing to move.
		_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE review_items SET content_blob = NULL WHERE id = ? AND content IS NULL`), id)
		return false, TranslateError(err)
	}
	if _, err := blobs.Put(ctx, key, bytes.NewReader(sealed)); err != nil {
		return false, fmt.Errorf("review content to the blob store: %w", err)
	}
	var n int64
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE review_items SET content = ?, content_blob = ?,
			content_size = COALESCE(content_size, LENGTH(content)) WHERE id = ? AND content_blob = '' AND content IS NOT NULL`), []byte{}, key, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil || n == 1 {
		return n == 1, TranslateError(err)
	}
	var now *string
	if err := s.db.GetContext(ctx, &now, s.db.Rebind(`SELECT content_blob FROM review_items WHERE id = ?`), id); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, TranslateError(err)
	}
	if now == nil || *now != key {
		return false, blobs.Delete(ctx, key)
	}
	return false, nil
}

// sealedContent is the sealed content of an item: from its row, or from
// the blob store when it was moved there; nil when it has none (deleted,
// or its blob is gone).
func (s *Review) sealedContent(ctx context.Context, r *reviewItemRow) ([]byte, error) {
	if r.ContentBlob == nil || *r.ContentBlob == "" || len(r.Content) > 0 {
		return r.Content, nil
	}
	blobs := s.db.reviewBlobStore()
	if blobs == nil {
		return nil, domain.Errorf(domain.Unavailable, "review item %q keeps its content in the blob store, and none is set", r.ID)
	}
	f, err := blobs.Open(ctx, *r.ContentBlob)
	if domain.ErrorCode(err) == domain.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(domain.ContextReader(ctx, f), maxSealedReviewContent+1))
	if err != nil {
		return nil, domain.Errorf(domain.Unavailable, "review item %q: reading its content from the blob store: %v", r.ID, err)
	}
	if len(b) > maxSealedReviewContent {
		return nil, domain.Errorf(domain.Internal, "review item %q: its content in the blob store is larger than any content item", r.ID)
	}
	return b, nil
}

// deleteContentBlobs deletes the blobs of those of ids whose content was
// moved; the keys deleted.
func (s *Review) deleteContentBlobs(ctx context.Context, ids []string) ([]string, error) {
	blobs := s.db.reviewBlobStore()
	if blobs == nil {
		return nil, nil
	}
	q, args, err := sqlx.In(`SELECT content_blob FROM review_items WHERE id IN (?) AND content_blob <> ''`, ids)
	if err != nil {
		return nil, err
	}
	var keys []string
	if err := s.db.SelectContext(ctx, &keys, s.db.Rebind(q), args...); err != nil {
		return nil, TranslateError(err)
	}
	for _, k := range keys {
		if err := blobs.Delete(ctx, k); err != nil {
			return nil, fmt.Errorf("review content from the blob store: %w", err)
		}
	}
	return keys, nil
}
