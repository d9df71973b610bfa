package persistence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestReview_ExpireReviewContent: the retention sweep deletes the retained
// content of the items whose time came and of the items whose job is gone
// (deleted by history retention), and keeps the rest, over more items than
// one of its batches reads.
func TestReview_ExpireReviewContent(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		insertJobs(t, db, "a1", "completed", 2500, t0)
		now := t0.Add(40 * 24 * time.Hour)
		rs := persistence.NewReview(db)
		require.NoError(t, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: "q0", AccountID: "a1", Name: "q0", RetentionDays: 30, Created: t0, Updated: t0}, 100))
		want := 0
		for i := range 2500 {
			// Odd items point to a job that is gone; every tenth item's
			// content is due.
			job := fmt.Sprintf("a1-completed-%07d", i)
			if i%2 == 1 {
				job = fmt.Sprintf("gone-%d", i)
			}
			expires := now.Add(time.Hour)
			if i%10 == 0 {
				expires = now.Add(-time.Hour)
			}
			if i%2 == 1 || i%10 == 0 {
				want++
			}
			_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO review_items (id, account_id, queue_id, job_id, job_result_id, machine,
				state, position, content, content_expires_at, created) VALUES (?, 'a1', 'q0', ?, ?, '[]', 'decided', ?, ?, ?, ?)`),
				fmt.Sprintf("item-%05d", i), job, fmt.Sprintf("res-%d", i), persistence.StoredTime(t0), []byte("sealed"),
				persistence.StoredTime(expires), persistence.StoredTime(t0))
			require.NoError(t, err)
		}
		n, err := rs.ExpireReviewContent(ctx, now)
		require.NoError(t, err)
		require.EqualValues(t, want, n)
		var left []string
		require.NoError(t, db.SelectContext(ctx, &left, `SELECT id FROM review_items WHERE content IS NOT NULL ORDER BY id`))
		require.Len(t, left, 2500-want)
		for _, id := range left {
			var i int
			_, err := fmt.Sscanf(id, "item-%05d", &i)
			require.NoError(t, err)
			require.True(t, i%2 == 0 && i%10 != 0, "item %d kept its content", i)
		}
		n, err = rs.ExpireReviewContent(ctx, now)
		require.NoError(t, err)
		require.Zero(t, n, "a second sweep finds nothing")
	})
}

// The sweep's two reads of the items that still hold content use the
// partial indexes of those items, not every item ever decided.
func TestReview_ContentSweepReadsByIndex(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		rs := persistence.NewReview(db)
		plan, err := rs.ExplainDueContent(t.Context(), t0)
		require.NoError(t, err)
		requireIndexedPlan(t, db, plan, "review_items_due_content_idx")
		plan, err = rs.ExplainHoldingContent(t.Context())
		require.NoError(t, err)
		requireIndexedPlan(t, db, plan, "review_items_holding_content_idx")
	})
}
