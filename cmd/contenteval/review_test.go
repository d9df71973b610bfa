package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
)

// reviewKey issues a key of role named name for the account.
func (e *testEnv) reviewKey(accountID, name string, role domain.KeyRole) string {
	e.t.Helper()
	_, token, err := e.Main.Keys.IssueRole(context.Background(), accountID, name, role, 0)
	require.NoError(e.t, err)
	return token
}

func (e *testEnv) createQueue(token string, in client.ReviewQueueInput) client.ReviewQueue {
	e.t.Helper()
	r, err := e.Client(token).CreateReviewQueueWithResponse(context.Background(), in)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	specChecked(e.t, r.HTTPResponse, r.Body)
	return r.JSON200.ReviewQueue
}

// queueItems lists every item of a queue in state (all when nil), two a
// page so that paging is used.
func queueItems(t *testing.T, c *client.ClientWithResponses, queueID string, state *client.ReviewItemState) []client.ReviewItem {
	t.Helper()
	var out []client.ReviewItem
	params := &client.ListReviewItemsParams{State: state, PageSize: ptr(int32(7))}
	for {
		r, err := c.ListReviewItemsWithResponse(context.Background(), queueID, params)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		specChecked(t, r.HTTPResponse, r.Body)
		out = append(out, r.JSON200.ReviewItems...)
		if r.JSON200.NextPageToken == nil {
			return out
		}
		params.PageToken = r.JSON200.NextPageToken
	}
}

func claim(t *testing.T, c *client.ClientWithResponses, queueID string) (*client.ReviewClaimResponse, int) {
	t.Helper()
	r, err := c.ClaimReviewItemWithResponse(context.Background(), queueID)
	require.NoError(t, err)
	if r.StatusCode() == http.StatusOK {
		specChecked(t, r.HTTPResponse, r.Body)
	}
	return r.JSON200, r.StatusCode()
}

func decide(t *testing.T, c *client.ClientWithResponses, itemID string, body client.ReviewDecisionRequest) *client.DecideReviewItemHTTPResponse {
	t.Helper()
	r, err := c.DecideReviewItemWithResponse(context.Background(), itemID, body)
	require.NoError(t, err)
	return r
}

// A decision with addToDataset on a label-first job adds the retained
// content to the label's dataset with the reviewer's outcome.
func TestReviewDecisionAddsDatasetExample(t *testing.T) {
	t.Parallel()
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.LabelFirst.Token
		label := env.createLabel(tok, map[string]any{"name": "Spam"})
		v := env.createVersion(tok, label.LabelId, map[string]any{"text": `=("buy now")`})
		q := env.createQueue(tok, client.ReviewQueueInput{Name: "spam",
			Routes: []client.ReviewRoute{{LabelId: &label.LabelId, Outcomes: &[]client.Outcome{client.OUTCOMETRUE}}}})
		for _, text := range []string{"buy now cheap", "hello"} {
			env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": text}, "labelVersionIds": []string{v.LabelVersionId}})
		}
		items := queueItems(t, env.Client(tok), q.QueueId, nil)
		require.Len(t, items, 1, "only the TRUE result is routed")

		rc := env.Client(env.reviewKey(env.LabelFirst.ID, "Ana", domain.RoleReviewer))
		cl, status := claim(t, rc, q.QueueId)
		require.Equal(t, http.StatusOK, status)
		d := decide(t, rc, cl.ReviewItem.ReviewItemId, client.ReviewDecisionRequest{ClaimToken: cl.ClaimToken, AddToDataset: ptr(true),
			Comment: ptr("real spam"), Labels: []client.ReviewLabelDecision{{Label: "Spam", Outcome: client.OUTCOMETRUE}}})
		require.Equal(t, http.StatusOK, d.StatusCode(), "%s", d.Body)

		ex, err := env.Client(tok).ListDatasetExamplesWithResponse(ctx, label.LabelId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, ex.StatusCode(), "%s", ex.Body)
		require.Len(t, ex.JSON200.Examples, 1)
		require.Equal(t, "buy now cheap", *ex.JSON200.Examples[0].ContentData.Text)
		require.Equal(t, client.EVALUATIONRESULTTRUE, ex.JSON200.Examples[0].ExpectedOutcome)
	})
}
