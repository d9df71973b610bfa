package persistence_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func (m *memBlobs) keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.files))
}

// reviewMediaFixture is an account with a queue taking every result of
// label Threat, on a database whose review media go to blobs.
func reviewMediaFixture(t *testing.T, db *persistence.DB) (*persistence.Review, *memBlobs) {
	require.NoError(t, db.EncryptSecretsWith(newServerKey(t)))
	blobs := &memBlobs{files: map[string][]byte{}}
	db.KeepReviewMediaIn(blobs)
	ctx := t.Context()
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
	rs := persistence.NewReview(db)
	require.NoError(t, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: "q", AccountID: "a1", Name: "threats",
		Routes:        []domain.ReviewRoute{{PolicyID: "p", Label: "Threat", MinScore: 0.5, MaxScore: 2}},
		RetentionDays: 30, Created: t0, Updated: t0}, 100))
	return rs, blobs
}

// routeItems writes a finished job whose every entry enters the queue.
func routeItems(t *testing.T, db *persistence.DB, id string, input ...domain.ContentItem) {
	rep := &rules.Report{Sections: []rules.SectionReport{{Name: "Threat", Result: rules.OutcomeTrue, Score: 1}}}
	done := t0.Add(time.Second)
	j := &domain.Job{ID: id, AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
		PolicyID: "p", PolicyVersionID: "v1", Created: t0, Updated: t0, Completed: &done, Input: input}
	var results []*domain.JobResult
	for i := range input {
		results = append(results, &domain.JobResult{ID: fmt.Sprintf("%s-r%d", id, i), JobID: id, Index: i, Report: rep, Created: t0})
	}
	require.NoError(t, persistence.NewJobs(db).CreateFinishedJob(t.Context(), j, results, nil))
}

// expireContent makes every item's content due, as a decision does.
func expireContent(t *testing.T, db *persistence.DB) {
	_, err := db.ExecContext(t.Context(), db.Rebind(`UPDATE review_items SET content_expires_at = ?`), persistence.StoredTime(t0))
	require.NoError(t, err)
}

// itemOf returns the queue's item of a job.
func itemOf(t *testing.T, rs *persistence.Review, jobID string) *domain.ReviewItem {
	items, _, err := rs.ListReviewItems(t.Context(), "a1", "q", "", t0, nil, 100, 1<<30)
	require.NoError(t, err)
	for _, it := range items {
		if it.JobID == jobID {
			return it
		}
	}
	t.Fatalf("no item of job %s", jobID)
	return nil
}

// TestReview_MediaContentInTheBlobStore: retained content that is not text
// (an image's bytes, a video's URL) moves to the blob store, sealed, and is
// read from there; text stays in its row. The content is readable before
// the move too, a second move finds nothing, and the retention sweep and a
// queue's deletion delete the blobs.
func TestReview_MediaContentInTheBlobStore(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		rs, blobs := reviewMediaFixture(t, db)
		image := []byte("\x89PNG secret-pixels")
		routeItems(t, db, "img", domain.ContentItem{Kind: domain.ContentImage, Bytes: image})
		routeItems(t, db, "vid", domain.ContentItem{Kind: domain.ContentVideoURL, URL: "https://media.example/secret-video.mp4"})
		routeItems(t, db, "txt", domain.ContentItem{Kind: domain.ContentText, Text: "secret words"})
		require.Equal(t, image, itemOf(t, rs, "img").Content.Bytes, "readable from the row before the move")

		n, err := rs.OffloadReviewContent(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n, "the image and the video")
		require.Len(t, blobs.keys(), 2)
		for _, k := range blobs.keys() {
			require.NotContains(t, string(blobs.files[k]), "secret", "a blob holds the sealed content only")
		}
		require.Equal(t, image, itemOf(t, rs, "img").Content.Bytes)
		require.Equal(t, "https://media.example/secret-video.mp4", itemOf(t, rs, "vid").Content.URL)
		require.Equal(t, "secret words", itemOf(t, rs, "txt").Content.Text)
		var rows []struct {
			JobID string  `db:"job_id"`
			Size  int     `db:"size"`
			Blob  *string `db:"content_blob"`
		}
		require.NoError(t, db.SelectContext(ctx, &rows, `SELECT job_id, LENGTH(content) AS size, content_blob FROM review_items ORDER BY job_id`))
		require.Len(t, rows, 3)
		for _, r := range rows {
			if r.JobID == "txt" {
				require.Nil(t, r.Blob)
				require.Positive(t, r.Size)
			} else {
				require.NotNil(t, r.Blob)
				require.Contains(t, blobs.keys(), *r.Blob)
				require.Zero(t, r.Size, "the row of %s keeps no content", r.JobID)
			}
		}
		n, err = rs.OffloadReviewContent(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a second move finds nothing")

		// The retention sweep deletes the blobs with the content.
		expireContent(t, db)
		cleared, err := rs.ExpireReviewContent(ctx, t0.Add(400*24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 3, cleared)
		require.Empty(t, blobs.keys())
		require.Nil(t, itemOf(t, rs, "img").Content)

		// A queue's deletion too.
		routeItems(t, db, "img2", domain.ContentItem{Kind: domain.ContentImage, Bytes: image})
		_, err = rs.OffloadReviewContent(ctx)
		require.NoError(t, err)
		require.Len(t, blobs.keys(), 1)
		require.NoError(t, rs.DeleteReviewQueue(ctx, "a1", "q"))
		require.Empty(t, blobs.keys())
	})
}

// TestReview_MediaContentRaces: content deleted while its blob is being
// written leaves no blob behind; a blob that went missing reads as content
// gone, not as an error.
func TestReview_MediaContentRaces(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		rs, blobs := reviewMediaFixture(t, db)
		routeItems(t, db, "img", domain.ContentItem{Kind: domain.ContentImage, Bytes: []byte("pixels")})
		blobs.beforePut = func() {
			expireContent(t, db)
			n, err := rs.ExpireReviewContent(ctx, t0.Add(400*24*time.Hour))
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
		}
		n, err := rs.OffloadReviewContent(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Empty(t, blobs.keys(), "the blob of deleted content is deleted again")
		var blob *string
		require.NoError(t, db.GetContext(ctx, &blob, `SELECT content_blob FROM review_items`))
		require.Nil(t, blob)

		blobs.beforePut = nil
		routeItems(t, db, "img2", domain.ContentItem{Kind: domain.ContentImage, Bytes: []byte("pixels")})
		_, err = rs.OffloadReviewContent(ctx)
		require.NoError(t, err)
		for _, k := range blobs.keys() {
			require.NoError(t, blobs.Delete(ctx, k))
		}
		it := itemOf(t, rs, "img2")
		require.Nil(t, it.Content)
	})
}
