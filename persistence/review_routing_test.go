package persistence_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestReview_ConcurrentRoutedJobs: synchronous jobs written at once (on
// PostgreSQL, several in one grouped statement) each enter the queues their
// results match, once, with their own content, the queue's SLA deadline
// where it has one, and images marked for the blob store.
func TestReview_ConcurrentRoutedJobs(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		rs, _ := reviewMediaFixture(t, db) // queue q: label Threat, no SLA
		require.NoError(t, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: "sla", AccountID: "a1", Name: "spam", SLAMinutes: 60,
			Routes:        []domain.ReviewRoute{{PolicyID: "p", Label: "Spam", MinScore: 0.5, MaxScore: 2}},
			RetentionDays: 30, Created: t0, Updated: t0}, 100))
		store := persistence.NewJobs(db)
		const n = 40
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				// Threat on every job, Spam on every third; every other
				// job is an image.
				rep := &rules.Report{Sections: []rules.SectionReport{{Name: "Threat", Result: rules.OutcomeTrue, Score: 1}}}
				if i%3 == 0 {
					rep.Sections = append(rep.Sections, rules.SectionReport{Name: "Spam", Result: rules.OutcomeTrue, Score: 0.9})
				}
				in := domain.ContentItem{Kind: domain.ContentText, Text: fmt.Sprintf("text %d", i)}
				if i%2 == 1 {
					in = domain.ContentItem{Kind: domain.ContentImage, Bytes: fmt.Appendf(nil, "pixels %d", i)}
				}
				id := fmt.Sprintf("job-%02d", i)
				done := t0.Add(time.Second)
				j := &domain.Job{ID: id, AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
					PolicyID: "p", PolicyVersionID: "v1", Created: t0, Updated: t0, Completed: &done, Input: []domain.ContentItem{in}}
				if err := store.CreateFinishedJob(ctx, j, []*domain.JobResult{{ID: id + "-r", JobID: id, Report: rep, Created: t0}}, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for queue, want := range map[string]int{"q": n, "sla": (n + 2) / 3} {
			items, _, err := rs.ListReviewItems(ctx, "a1", queue, "", t0, nil, 100, 1<<30)
			require.NoError(t, err)
			require.Len(t, items, want, "queue %s", queue)
			for _, it := range items {
				var i int
				_, err := fmt.Sscanf(it.JobID, "job-%02d", &i)
				require.NoError(t, err)
				if i%2 == 1 {
					require.Equal(t, fmt.Sprintf("pixels %d", i), string(it.Content.Bytes))
				} else {
					require.Equal(t, fmt.Sprintf("text %d", i), it.Content.Text)
				}
				if queue == "sla" {
					require.NotNil(t, it.SLADeadline)
					require.True(t, it.SLADeadline.Equal(persistence.StoredTime(t0).Add(time.Hour)), "%v", it.SLADeadline)
				} else {
					require.Nil(t, it.SLADeadline)
				}
			}
		}
		var marked int
		require.NoError(t, db.GetContext(ctx, &marked, `SELECT COUNT(*) FROM review_items WHERE content_blob = ''`))
		images := 0 // the items of image jobs, in both queues
		for i := 1; i < n; i += 2 {
			images++
			if i%3 == 0 {
				images++
			}
		}
		require.Equal(t, images, marked)
	})
}

// TestReview_QueueDeletedUnderCachedRoutes: a queue deleted where this
// process's cached routes cannot see it (another replica; here a bare
// DELETE) fails no job: the job is routed again from the queues that exist
// and written without the vanished queue's item.
func TestReview_QueueDeletedUnderCachedRoutes(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		rs, _ := reviewMediaFixture(t, db) // queue q: label Threat
		require.NoError(t, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: "kept", AccountID: "a1", Name: "kept",
			Routes:        []domain.ReviewRoute{{PolicyID: "p", Label: "Threat", MinScore: 0.5, MaxScore: 2}},
			RetentionDays: 30, Created: t0, Updated: t0}, 100))
		store := persistence.NewJobs(db)
		write := func(id string, webhook bool) error {
			done := t0.Add(time.Second)
			j := &domain.Job{ID: id, AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
				PolicyID: "p", PolicyVersionID: "v1", Created: t0, Updated: t0, Completed: &done,
				Input: []domain.ContentItem{{Kind: domain.ContentText, Text: "words of " + id}}}
			if webhook {
				j.Webhook = &domain.Webhook{URL: "https://example.com/hook"}
			}
			rep := &rules.Report{Sections: []rules.SectionReport{{Name: "Threat", Result: rules.OutcomeTrue, Score: 1}}}
			return store.CreateFinishedJob(ctx, j, []*domain.JobResult{{ID: id + "-r", JobID: id, Report: rep, Created: t0}}, nil)
		}
		require.NoError(t, write("before", false)) // and the routes are cached
		_, err := db.ExecContext(ctx, db.Rebind(`DELETE FROM review_queues WHERE id = ?`), "q")
		require.NoError(t, err)
		// Both write paths: the grouped statement (PostgreSQL) and the transaction.
		for _, tc := range []struct {
			id      string
			webhook bool
		}{{"after", false}, {"after-webhook", true}} {
			require.NoError(t, write(tc.id, tc.webhook), tc.id)
			_, err = store.GetJob(ctx, "a1", tc.id)
			require.NoError(t, err)
			items, _, err := rs.ListReviewItems(ctx, "a1", "kept", "", t0, nil, 100, 1<<30)
			require.NoError(t, err)
			var jobs []string
			for _, it := range items {
				jobs = append(jobs, it.JobID)
			}
			require.Contains(t, jobs, tc.id, "the queue that exists still takes the job")
		}

		// A worker's finish, which routes inside its own transaction.
		require.NoError(t, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: "gone", AccountID: "a1", Name: "gone",
			Routes:        []domain.ReviewRoute{{PolicyID: "p", Label: "Threat", MinScore: 0.5, MaxScore: 2}},
			RetentionDays: 30, Created: t0, Updated: t0}, 100))
		require.NoError(t, write("caches-gone", false))
		_, err = db.ExecContext(ctx, db.Rebind(`DELETE FROM review_queues WHERE id = ?`), "gone")
		require.NoError(t, err)
		j := &domain.Job{ID: "worked", AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobPending,
			PolicyID: "p", PolicyVersionID: "v1", Created: t0, Updated: t0,
			Input: []domain.ContentItem{{Kind: domain.ContentText, Text: "worked words"}}}
		require.NoError(t, store.CreateJob(ctx, j))
		claimed, err := store.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 10, 0)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		rep := &rules.Report{Sections: []rules.SectionReport{{Name: "Threat", Result: rules.OutcomeTrue, Score: 1}}}
		require.NoError(t, store.FinishJob(ctx, "worked", "w", domain.JobCompleted, t0,
			nil, []*domain.JobResult{{ID: "worked-r", JobID: "worked", Report: rep, Created: t0}}, nil))
		items, _, err := rs.ListReviewItems(ctx, "a1", "kept", "", t0, nil, 100, 1<<30)
		require.NoError(t, err)
		var jobs []string
		for _, it := range items {
			jobs = append(jobs, it.JobID)
		}
		require.Contains(t, jobs, "worked")
	})
}
