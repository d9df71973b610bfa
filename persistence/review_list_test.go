package persistence_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestReview_ListStopsAtItsByteBudget: a page of items stops before their
// retained content would pass the byte budget, whether the content is in
// the row or in the blob store (and for items written before their size
// was stored), and holds at least one item; the rest follows on the next
// page, with the images' bytes read back from the blob store.
func TestReview_ListStopsAtItsByteBudget(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		rs, _ := reviewMediaFixture(t, db)
		image := func(b byte) []byte { return bytes.Repeat([]byte{b}, 10_000) }
		for _, j := range []struct {
			id   string
			item domain.ContentItem
		}{
			{"t1", domain.ContentItem{Kind: domain.ContentText, Text: "one"}},
			{"i1", domain.ContentItem{Kind: domain.ContentImage, Bytes: image('a')}},
			{"t2", domain.ContentItem{Kind: domain.ContentText, Text: strings.Repeat("two ", 1500)}},
			{"i2", domain.ContentItem{Kind: domain.ContentImage, Bytes: image('b')}},
			{"t3", domain.ContentItem{Kind: domain.ContentText, Text: "three"}},
		} {
			routeItems(t, db, j.id, j.item)
		}
		_, err := rs.OffloadReviewContent(ctx)
		require.NoError(t, err)
		// The texts as if written before content_size: their size is their row's.
		_, err = db.ExecContext(ctx, `UPDATE review_items SET content_size = NULL WHERE content_blob IS NULL`)
		require.NoError(t, err)

		pages := func(maxBytes int) [][]string {
			var out [][]string
			var after *domain.ReviewItemCursor
			for range 10 {
				items, more, err := rs.ListReviewItems(ctx, "a1", "q", "", t0, after, 100, maxBytes)
				require.NoError(t, err)
				var page []string
				for _, it := range items {
					page = append(page, it.JobID)
					if it.Content.Kind == domain.ContentImage {
						require.Equal(t, image(map[string]byte{"i1": 'a', "i2": 'b'}[it.JobID]), it.Content.Bytes)
					}
				}
				out = append(out, page)
				if !more {
					return out
				}
				last := items[len(items)-1]
				after = &domain.ReviewItemCursor{Created: last.Created, ID: last.ID}
			}
			t.Fatal("the pages never end")
			return nil
		}
		require.Equal(t, [][]string{{"t1", "i1", "t2", "i2", "t3"}}, pages(1<<20))
		// An image is 10,000 bytes (13,000 and more sealed), t2 6,000.
		require.Equal(t, [][]string{{"t1", "i1"}, {"t2"}, {"i2", "t3"}}, pages(15_000))
		require.Equal(t, [][]string{{"t1"}, {"i1"}, {"t2"}, {"i2"}, {"t3"}}, pages(1))
	})
}
