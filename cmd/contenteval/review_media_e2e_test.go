package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
)

// mediaInTheBlobStore: an image's retained content moves to the blob store
// (the server's own, a local directory here), sealed, and is read from
// there; its retention deletes the blob.
func (e *reviewE2E) mediaInTheBlobStore(t *testing.T) {
	env, ctx := e.env, e.ctx
	q := env.createQueue(e.admin, client.ReviewQueueInput{Name: "images", RetentionDays: ptr(int32(1)),
		Routes: []client.ReviewRoute{{PolicyId: &e.policyID}}})
	img := testPNG(t, "for review")
	env.submit(e.admin, client.CreateJobRequest{PolicyId: e.policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{{Image: &img}}})
	items := queueItems(t, e.ac, q.QueueId, nil)
	require.Len(t, items, 1)
	id := items[0].ReviewItemId

	// The server's workers move it within seconds; this does it now.
	_, err := persistence.NewReview(env.Main.DB).OffloadReviewContent(ctx)
	require.NoError(t, err)
	var row struct {
		Size int     `db:"size"`
		Blob *string `db:"content_blob"`
	}
	require.NoError(t, env.Main.DB.GetContext(ctx, &row, env.Main.DB.Rebind(`SELECT LENGTH(content) AS size, content_blob FROM review_items WHERE id = ?`), id))
	require.Zero(t, row.Size, "the row keeps no image")
	require.NotNil(t, row.Blob)
	f, err := env.Main.Blobs.Open(ctx, *row.Blob)
	require.NoError(t, err)
	var stored bytes.Buffer
	_, err = stored.ReadFrom(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Greater(t, stored.Len(), len(img), "the sealed image")
	require.False(t, bytes.Contains(stored.Bytes(), img[:32]), "the blob store holds no plaintext")
	gi, err := e.ac.GetReviewItemWithResponse(ctx, id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, gi.StatusCode(), "%s", gi.Body)
	require.Equal(t, img, *(*gi.JSON200.ReviewItem.ContentData)[0].Image)

	cl, status := claim(t, env.Client(e.ana), q.QueueId)
	require.Equal(t, http.StatusOK, status)
	d := decide(t, env.Client(e.ana), cl.ReviewItem.ReviewItemId, client.ReviewDecisionRequest{ClaimToken: cl.ClaimToken,
		Labels: []client.ReviewLabelDecision{{Label: "Threat", Outcome: client.OUTCOMEFALSE}}})
	require.Equal(t, http.StatusOK, d.StatusCode(), "%s", d.Body)
	env.Clock.Add(2 * 24 * time.Hour)
	_, err = env.Main.Retention.Sweep(ctx)
	require.NoError(t, err)
	_, err = env.Main.Blobs.Stat(ctx, *row.Blob)
	require.Equal(t, domain.NotFound, domain.ErrorCode(err), "the blob is deleted with the content")
	gi, err = e.ac.GetReviewItemWithResponse(ctx, id)
	require.NoError(t, err)
	require.Nil(t, gi.JSON200.ReviewItem.ContentData)
}
