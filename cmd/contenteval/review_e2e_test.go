package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
)

// Human review end to end on both backends: results routed by score band
// and outcome into two queues (and no other), concurrent claims that never
// share an item, claim expiry, a decision recorded once, stale tokens,
// feedback counted in live metrics, the signed decision webhook, stats,
// retained content encrypted at rest and deleted on schedule, the role
// matrix and another account's 404. The phases run in order on one
// fixture, each on what the ones before it left; a failed phase ends the
// test.
func TestReviewQueuesEndToEnd(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true; c.WebhookPoll = 20 * time.Millisecond }, func(t *testing.T, env *testEnv) {
		e := newReviewE2E(t, env)
		for _, phase := range []struct {
			name string
			run  func(*testing.T)
		}{
			{"routing", e.routing},
			{"bad queues", e.badQueues},
			{"roles", e.roles},
			{"concurrent claims", e.concurrentClaims},
			{"decisions", e.decisions},
			{"feedback and stats", e.feedbackAndStats},
			{"webhooks", e.webhooks},
			{"retained content", e.retainedContent},
			{"claim expiry", e.claimExpiry},
			{"retention and deletion", e.retentionAndDeletion},
			{"media in the blob store", e.mediaInTheBlobStore},
		} {
			if !t.Run(phase.name, phase.run) {
				t.FailNow()
			}
		}
	})
}

// reviewE2E is TestReviewQueuesEndToEnd's fixture: an account with the
// policy "review", its queues threats, spam and none, two reviewers and an
// api key, and what each phase leaves for the next.
type reviewE2E struct {
	env                 *testEnv
	ctx                 context.Context
	admin               string
	ac                  *client.ClientWithResponses
	received            func() []receivedWebhook
	policyID, versionID string
	threats, spam, none client.ReviewQueue
	ana, ben, apiKey    string
	bc                  *client.ClientWithResponses // Ben's

	want      map[string]map[string]bool // queue -> the jobs routed to it
	quiet     string                     // a job no queue takes
	contentOf map[string]string          // job -> its text
	total     int                        // the items of all queues
	// threatClaims are the claims of the threats queue's items, each one's
	// token the first claim's.
	threatClaims []reviewClaimed
	decidedID    string // overturned by Ben
	confirmedID  string // confirmed by Ben
}

// reviewClaimed is a claim made in the concurrent claims phase.
type reviewClaimed struct {
	item, queue, token, by string
	created                time.Time
}

func newReviewE2E(t *testing.T, env *testEnv) *reviewE2E {
	ctx := context.Background()
	admin := env.PolicyFirst.Token
	ac := env.Client(admin)
	acct, err := env.Main.Accounts.GetAccount(ctx, env.PolicyFirst.ID)
	require.NoError(t, err)
	srv, received := webhookReceiver(t, acct.WebhookSecret)

	pr, err := ac.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "review", Text: testPolicyText})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
	policyID, versionID := pr.JSON200.Policy.PolicyId, pr.JSON200.PolicyVersion.PolicyVersionId

	// Threats: the Threat section TRUE with a score of at least 0.5.
	// Spam: the Spam section in [0.5, 2), any outcome.
	threats := env.createQueue(admin, client.ReviewQueueInput{Name: "threats", Priority: ptr(int32(10)), SlaMinutes: ptr(int32(60)),
		WebhookUrl: ptr(srv.URL + "/review"),
		Routes:     []client.ReviewRoute{{PolicyId: &policyID, Label: ptr("Threat"), MinScore: ptr(0.5), Outcomes: &[]client.Outcome{client.OUTCOMETRUE}}}})
	spam := env.createQueue(admin, client.ReviewQueueInput{Name: "spam", Priority: ptr(int32(1)), RetentionDays: ptr(int32(2)),
		Routes: []client.ReviewRoute{{PolicyId: &policyID, Label: ptr("Spam"), MinScore: ptr(0.5), MaxScore: ptr(2.0)}}})
	// A queue whose band no result reaches.
	none := env.createQueue(admin, client.ReviewQueueInput{Name: "none",
		Routes: []client.ReviewRoute{{PolicyId: &policyID, MinScore: ptr(0.2), MaxScore: ptr(0.8)}}})
	require.Equal(t, 30, int(threats.RetentionDays))

	ana, ben := env.reviewKey(env.PolicyFirst.ID, "Ana", domain.RoleReviewer), env.reviewKey(env.PolicyFirst.ID, "Ben", domain.RoleReviewer)
	return &reviewE2E{
		env: env, ctx: ctx, admin: admin, ac: ac, received: received,
		policyID: policyID, versionID: versionID, threats: threats, spam: spam, none: none,
		ana: ana, ben: ben, apiKey: env.reviewKey(env.PolicyFirst.ID, "backend", domain.RoleAPI), bc: env.Client(ben),
	}
}

// routing: 50 jobs, half through the fast path, half through the workers,
// each in the queues whose routes it matches, once.
func (e *reviewE2E) routing(t *testing.T) {
	env, admin, ac := e.env, e.admin, e.ac
	threats, spam, none, policyID := e.threats, e.spam, e.none, e.policyID
	texts := []string{"i will kill you", "buy now", "i will kill you, buy now", "hello"}
	want := map[string]map[string]bool{threats.QueueId: {}, spam.QueueId: {}}
	var quiet string
	var async []string
	for i := range 50 {
		text := texts[i%4]
		j := env.submit(admin, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(i%2 == 0),
			ContentData: []client.ContentData{textItem(text, nil)}})
		if i%2 == 1 {
			async = append(async, j.JobUuid)
		}
		if strings.Contains(text, "kill") {
			want[threats.QueueId][j.JobUuid] = true
		}
		if strings.Contains(text, "buy") {
			want[spam.QueueId][j.JobUuid] = true
		}
		if text == "hello" {
			quiet = j.JobUuid
		}
	}
	e.want, e.quiet = want, quiet
	for _, id := range async {
		env.waitForJob(admin, id)
	}
	contentOf := map[string]string{} // job -> its text
	e.contentOf = contentOf
	for q, jobs := range want {
		items := queueItems(t, ac, q, nil)
		got := map[string]bool{}
		for _, it := range items {
			require.False(t, got[it.JobUuid], "a result enters a queue once")
			got[it.JobUuid] = true
			require.Equal(t, client.REVIEWITEMSTATEOPEN, it.State)
			require.NotNil(t, it.ContentData)
			contentOf[it.JobUuid] = *(*it.ContentData)[0].Text
		}
		require.Equal(t, jobs, got, "queue %s", q)
	}
	require.Empty(t, queueItems(t, ac, none.QueueId, nil))

	// The gauges: every item open, none older than the clock allows.
	metrics := string(env.call(http.MethodGet, "/metrics", "", "").Body)
	require.Contains(t, metrics, fmt.Sprintf(`contenteval_review_open_items{account=%q,queue=%q} %d`, env.PolicyFirst.ID, threats.QueueId, len(want[threats.QueueId])))
	require.Contains(t, metrics, fmt.Sprintf(`contenteval_review_open_items{account=%q,queue=%q} 0`, env.PolicyFirst.ID, none.QueueId))
	require.Contains(t, metrics, fmt.Sprintf(`contenteval_review_oldest_open_age_seconds{account=%q,queue=%q} 0`, env.PolicyFirst.ID, none.QueueId))
	e.total = len(want[threats.QueueId]) + len(want[spam.QueueId])
	require.Equal(t, 50, e.total)
}

// badQueues: bad queues are 400 naming the field; a taken name is 409.
func (e *reviewE2E) badQueues(t *testing.T) {
	for _, tc := range []struct{ body, field string }{
		{`{"name":"b","routes":[]}`, "routes"},
		{`{"name":"","routes":[{"policyId":"p"}]}`, "name"},
		{`{"name":"b","routes":[{"policyId":"p","labelId":"l"}]}`, "routes[0]"},
		{`{"name":"b","routes":[{"policyId":"p","minScore":0.8,"maxScore":0.5}]}`, "routes[0].minScore"},
		{`{"name":"b","routes":[{"policyId":"p","outcomes":["OUTCOME_TRUE","OUTCOME_TRUE"]}]}`, "routes[0].outcomes"},
		{`{"name":"b","routes":[{"policyId":"p"}],"priority":5000}`, "priority"},
		{`{"name":"b","routes":[{"policyId":"p"}],"retentionDays":0}`, "retentionDays"},
		{`{"name":"b","routes":[{"policyId":"p"}],"webhookUrl":"ftp://x"}`, "webhookUrl"},
		{`{"name":"threats","routes":[{"policyId":"p"}]}`, ""},
	} {
		r := e.env.call(http.MethodPost, "/v1/review-queues", e.admin, tc.body)
		if tc.field == "" {
			requireStatus(t, r, http.StatusConflict, domain.AlreadyExists)
			continue
		}
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.body, r.Body)
		require.Contains(t, string(r.Body), tc.field, tc.body)
	}
}

// roles: reviewers review; api keys do not; reviewers do not change the
// account's configuration.
func (e *reviewE2E) roles(t *testing.T) {
	ana, apiKey, spam, quiet := e.ana, e.apiKey, e.spam, e.quiet
	queueBody := mustJSON(t, map[string]any{"name": "x", "routes": []map[string]any{{"policyId": e.policyID}}})
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
	}{
		{"api lists queues", http.MethodGet, "/v1/review-queues", apiKey, "", http.StatusForbidden},
		{"api claims", http.MethodPost, "/v1/review-queues/-/claim", apiKey, "", http.StatusForbidden},
		{"api reads stats", http.MethodGet, "/v1/review-queues/" + spam.QueueId + "/stats", apiKey, "", http.StatusForbidden},
		{"reviewer creates a queue", http.MethodPost, "/v1/review-queues", ana, queueBody, http.StatusForbidden},
		{"reviewer deletes a queue", http.MethodDelete, "/v1/review-queues/" + spam.QueueId, ana, "", http.StatusForbidden},
		{"reviewer creates a policy", http.MethodPost, "/v1/policies", ana, mustJSON(t, map[string]any{"policyKey": "r", "text": testPolicyText}), http.StatusForbidden},
		{"reviewer lists jobs", http.MethodGet, "/v1/jobs", ana, "", http.StatusForbidden},
		{"reviewer reads a job no item points to", http.MethodGet, "/v1/jobs/" + quiet, ana, "", http.StatusNotFound},
		{"reviewer lists queues", http.MethodGet, "/v1/review-queues", ana, "", http.StatusOK},
		{"api reads a job", http.MethodGet, "/v1/jobs/" + quiet, apiKey, "", http.StatusOK},
	} {
		r := e.env.call(tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		if tc.status == http.StatusForbidden {
			requireStatus(t, r, http.StatusForbidden, domain.PermissionDenied)
		}
	}
}

// concurrentClaims: two reviewers claim across queues at once until
// nothing is open: every item once, the higher-priority queue first for
// each.
func (e *reviewE2E) concurrentClaims(t *testing.T) {
	env, ctx, ac, threats, spam := e.env, e.ctx, e.ac, e.threats, e.spam
	var mu sync.Mutex
	var all []reviewClaimed
	var wg sync.WaitGroup
	for _, tok := range []string{e.ana, e.ben} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := env.Client(tok)
			seenLow := false
			for {
				r, err := c.ClaimReviewItemWithResponse(ctx, "-")
				if err != nil || r.StatusCode() == http.StatusNotFound {
					return
				}
				if r.StatusCode() != http.StatusOK {
					t.Errorf("claim: %d %s", r.StatusCode(), r.Body)
					return
				}
				it := r.JSON200.ReviewItem
				if it.QueueId == threats.QueueId && seenLow {
					t.Errorf("claimed a threat after a spam item")
				}
				seenLow = seenLow || it.QueueId == spam.QueueId
				mu.Lock()
				all = append(all, reviewClaimed{it.ReviewItemId, it.QueueId, r.JSON200.ClaimToken, deref(it.ClaimedBy), it.Created})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, all, e.total)
	ids := map[string]bool{}
	for _, c := range all {
		require.False(t, ids[c.item], "item %s claimed twice", c.item)
		ids[c.item] = true
		require.Contains(t, []string{"Ana", "Ben"}, c.by)
	}
	_, status := claim(t, env.Client(e.ana), "-")
	require.Equal(t, http.StatusNotFound, status)
	require.Len(t, queueItems(t, ac, threats.QueueId, ptr(client.REVIEWITEMSTATECLAIMED)), len(e.want[threats.QueueId]))
	for _, c := range all {
		if c.queue == threats.QueueId {
			e.threatClaims = append(e.threatClaims, c)
		}
	}
	// In the queue's order (one SLA, so by entry time, then id), not in
	// the order the two reviewers' concurrent claims happened to return.
	slices.SortFunc(e.threatClaims, func(a, b reviewClaimed) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.item, b.item))
	})
}

// decisions: a reviewer reads the job its item points to; Ben overturns
// the machine's Threat on one item and a second decision fails; a released
// claim's token is stale; a released item keeps its place, a skipped one
// goes behind the others.
func (e *reviewE2E) decisions(t *testing.T) {
	env, ctx, ac, bc, threats, threatClaims := e.env, e.ctx, e.ac, e.bc, e.threats, e.threatClaims
	// A reviewer reads the job its item points to.
	first := threatClaims[0]
	fi, err := ac.GetReviewItemWithResponse(ctx, first.item)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, env.call(http.MethodGet, "/v1/jobs/"+fi.JSON200.ReviewItem.JobUuid, e.ana, "").Status)
	require.NotNil(t, fi.JSON200.ReviewItem.Report, "an item carries its report")
	require.NotNil(t, fi.JSON200.ReviewItem.Hits, "and its hits")
	require.NotEmpty(t, *fi.JSON200.ReviewItem.Hits)
	for _, h := range *fi.JSON200.ReviewItem.Hits {
		require.Equal(t, fi.JSON200.ReviewItem.JobResultId, h.JobResultId)
	}
	require.NotNil(t, fi.JSON200.ReviewItem.SlaDeadline)

	// Ben overturns the machine's Threat on one item; a second decision
	// fails.
	decision := client.ReviewDecisionRequest{ClaimToken: first.token, Comment: ptr("<script>alert(1)</script> not a threat"),
		Labels: []client.ReviewLabelDecision{{Label: "Threat", Outcome: client.OUTCOMEFALSE}}}
	d := decide(t, bc, first.item, decision)
	require.Equal(t, http.StatusOK, d.StatusCode(), "%s", d.Body)
	specChecked(t, d.HTTPResponse, d.Body)
	require.Equal(t, client.REVIEWITEMSTATEDECIDED, d.JSON200.ReviewItem.State)
	require.Equal(t, "Ben", deref(d.JSON200.ReviewItem.DecidedBy))
	again := decide(t, bc, first.item, decision)
	requireStatus(t, rawResponse{Status: again.StatusCode(), Body: again.Body}, http.StatusBadRequest, domain.FailedPrecondition)
	e.decidedID = first.item

	// A released claim's token is stale; a released item keeps its
	// place, a skipped one goes behind the others.
	a1, a2 := threatClaims[1], threatClaims[2]
	for _, c := range []reviewClaimed{a2, a1} {
		rl, err := bc.ReleaseReviewItemWithResponse(ctx, c.item, client.ReviewClaimTokenRequest{ClaimToken: c.token})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rl.StatusCode(), "%s", rl.Body)
	}
	d = decide(t, bc, a1.item, client.ReviewDecisionRequest{ClaimToken: a1.token,
		Labels: []client.ReviewLabelDecision{{Label: "Threat", Outcome: client.OUTCOMETRUE}}})
	requireStatus(t, rawResponse{Status: d.StatusCode(), Body: d.Body}, http.StatusConflict, domain.Aborted)
	cl, status := claim(t, bc, threats.QueueId)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, a1.item, cl.ReviewItem.ReviewItemId, "a released item keeps its place (the older first)")
	sk, err := bc.SkipReviewItemWithResponse(ctx, cl.ReviewItem.ReviewItemId, client.ReviewClaimTokenRequest{ClaimToken: cl.ClaimToken})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, sk.StatusCode(), "%s", sk.Body)
	cl, _ = claim(t, bc, threats.QueueId)
	require.Equal(t, a2.item, cl.ReviewItem.ReviewItemId, "a skipped item goes behind the others")
	d = decide(t, bc, cl.ReviewItem.ReviewItemId, client.ReviewDecisionRequest{ClaimToken: cl.ClaimToken,
		Labels: []client.ReviewLabelDecision{{Label: "Threat", Outcome: client.OUTCOMETRUE}, {Label: "Spam", Outcome: client.OUTCOMEFALSE}}})
	require.Equal(t, http.StatusOK, d.StatusCode(), "%s", d.Body)
	e.confirmedID = cl.ReviewItem.ReviewItemId
}

// feedbackAndStats: the decisions are feedback in the version's live
// metrics; the queue's stats have exact counts and the overturn rate.
func (e *reviewE2E) feedbackAndStats(t *testing.T) {
	ctx := e.ctx
	// The decisions are feedback: one FP and one TP for Threat, and
	// one TN or FP for Spam, in the version's live metrics.
	mr, err := e.ac.GetPolicyVersionMetricsWithResponse(ctx, e.policyID, e.versionID, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, mr.StatusCode(), "%s", mr.Body)
	byLabel := map[string]client.VersionMetric{}
	for _, m := range mr.JSON200.Metrics {
		byLabel[m.Label] = m
	}
	require.Equal(t, int32(2), byLabel["Threat"].Annotations)
	require.Equal(t, int32(1), byLabel["Threat"].TruePositives)
	require.Equal(t, int32(1), byLabel["Threat"].FalsePositives)
	require.Equal(t, int32(1), byLabel["Spam"].Annotations)

	// Stats: exact counts and the overturn rate.
	st, err := e.env.Client(e.ana).GetReviewQueueStatsWithResponse(ctx, e.threats.QueueId, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, st.StatusCode(), "%s", st.Body)
	specChecked(t, st.HTTPResponse, st.Body)
	require.Equal(t, int32(1), st.JSON200.Open, "the skipped item")
	require.Equal(t, int32(len(e.want[e.threats.QueueId])-3), st.JSON200.Claimed)
	require.Equal(t, int32(2), st.JSON200.Decided)
	require.NotNil(t, st.JSON200.OldestOpenAge)
	sort.Slice(st.JSON200.Labels, func(i, j int) bool { return st.JSON200.Labels[i].Label < st.JSON200.Labels[j].Label })
	require.Len(t, st.JSON200.Labels, 2)
	require.Equal(t, "Spam", st.JSON200.Labels[0].Label)
	require.Equal(t, int32(1), st.JSON200.Labels[0].Decided)
	require.Equal(t, "Threat", st.JSON200.Labels[1].Label)
	require.Equal(t, int32(2), st.JSON200.Labels[1].Decided)
	require.Equal(t, int32(1), st.JSON200.Labels[1].Overturned)
	require.InDelta(t, 0.5, *st.JSON200.Labels[1].OverturnRate, 1e-12)
}

// webhooks: the decision webhooks arrive signed (the receiver verifies),
// one each.
func (e *reviewE2E) webhooks(t *testing.T) {
	got := waitForWebhooks(t, e.received, 2)
	hooked := map[string]string{}
	for _, w := range got {
		var p struct {
			Type       string            `json:"type"`
			ReviewItem client.ReviewItem `json:"reviewItem"`
		}
		require.NoError(t, json.Unmarshal(w.body, &p))
		require.Equal(t, "review_item.decided", p.Type)
		require.Nil(t, p.ReviewItem.ContentData, "the webhook carries no content")
		hooked[p.ReviewItem.ReviewItemId] = deref(p.ReviewItem.DecidedBy)
	}
	require.Equal(t, map[string]string{e.decidedID: "Ben", e.confirmedID: "Ben"}, hooked)
}

// retainedContent: retained content is sealed in the row and open through
// the API; another account sees none of it.
func (e *reviewE2E) retainedContent(t *testing.T) {
	env, ctx, decidedID, threats := e.env, e.ctx, e.decidedID, e.threats
	var raw []byte
	require.NoError(t, env.Main.DB.GetContext(ctx, &raw, env.Main.DB.Rebind(`SELECT content FROM review_items WHERE id = ?`), decidedID))
	require.NotEmpty(t, raw)
	require.NotContains(t, string(raw), "kill")
	gi, err := e.ac.GetReviewItemWithResponse(ctx, decidedID)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, gi.StatusCode(), "%s", gi.Body)
	require.Equal(t, e.contentOf[gi.JSON200.ReviewItem.JobUuid], *(*gi.JSON200.ReviewItem.ContentData)[0].Text)
	require.NotNil(t, gi.JSON200.ReviewItem.ContentExpiresAt)

	// Another account sees none of it.
	other := env.newAccount("other", domain.AccountPolicyFirst)
	for _, path := range []string{"/v1/review-items/" + decidedID, "/v1/review-queues/" + threats.QueueId,
		"/v1/review-queues/" + threats.QueueId + "/items", "/v1/review-queues/" + threats.QueueId + "/stats"} {
		requireStatus(t, env.call(http.MethodGet, path, other.Token, ""), http.StatusNotFound, domain.NotFound)
	}
	requireStatus(t, env.call(http.MethodPost, "/v1/review-queues/"+threats.QueueId+"/claim", other.Token, ""), http.StatusNotFound, domain.NotFound)
	requireStatus(t, env.call(http.MethodPost, "/v1/review-queues/-/claim", other.Token, ""), http.StatusNotFound, domain.NotFound)
	otherReviewer := env.reviewKey(other.ID, "Eve", domain.RoleReviewer)
	requireStatus(t, env.call(http.MethodGet, "/v1/review-items/"+decidedID, otherReviewer, ""), http.StatusNotFound, domain.NotFound)
	requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+gi.JSON200.ReviewItem.JobUuid, otherReviewer, ""), http.StatusNotFound, domain.NotFound)
}

// claimExpiry: claims expire after 10 minutes: the items are open again
// and the old tokens are stale; a renewed claim lasts 10 minutes more.
func (e *reviewE2E) claimExpiry(t *testing.T) {
	env, ctx, ac, bc, threats := e.env, e.ctx, e.ac, e.bc, e.threats
	env.Clock.Add(11 * time.Minute)
	require.Len(t, queueItems(t, ac, threats.QueueId, ptr(client.REVIEWITEMSTATEOPEN)), len(e.want[threats.QueueId])-2)
	require.Empty(t, queueItems(t, ac, threats.QueueId, ptr(client.REVIEWITEMSTATECLAIMED)))
	late := e.threatClaims[3]
	d := decide(t, env.Client(e.ana), late.item, client.ReviewDecisionRequest{ClaimToken: late.token,
		Labels: []client.ReviewLabelDecision{{Label: "Threat", Outcome: client.OUTCOMETRUE}}})
	requireStatus(t, rawResponse{Status: d.StatusCode(), Body: d.Body}, http.StatusConflict, domain.Aborted)
	cl, status := claim(t, bc, "-")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, threats.QueueId, cl.ReviewItem.QueueId, "the higher-priority queue first")
	env.Clock.Add(5 * time.Minute)
	rn, err := bc.RenewReviewClaimWithResponse(ctx, cl.ReviewItem.ReviewItemId, client.ReviewClaimTokenRequest{ClaimToken: cl.ClaimToken})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rn.StatusCode(), "%s", rn.Body)
	require.True(t, rn.JSON200.ClaimExpiresAt.After(cl.ClaimExpiresAt))
	env.Clock.Add(6 * time.Minute) // past the first expiry, within the renewed one
	rl, err := bc.ReleaseReviewItemWithResponse(ctx, cl.ReviewItem.ReviewItemId, client.ReviewClaimTokenRequest{ClaimToken: cl.ClaimToken})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rl.StatusCode(), "the renewed claim still holds: %s", rl.Body)
}

// retentionAndDeletion: the decided item's content goes retentionDays
// (30) after its decision; the undecided items keep theirs. Deleting a
// queue deletes its items.
func (e *reviewE2E) retentionAndDeletion(t *testing.T) {
	env, ctx, ac, decidedID := e.env, e.ctx, e.ac, e.decidedID
	var raw []byte
	env.Clock.Add(29 * 24 * time.Hour)
	_, err := env.Main.Retention.Sweep(ctx)
	require.NoError(t, err)
	require.NoError(t, env.Main.DB.GetContext(ctx, &raw, env.Main.DB.Rebind(`SELECT content FROM review_items WHERE id = ?`), decidedID))
	require.NotNil(t, raw, "kept until its retention")
	env.Clock.Add(2 * 24 * time.Hour)
	rep, err := env.Main.Retention.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), rep.ReviewContentDeleted)
	require.NoError(t, env.Main.DB.GetContext(ctx, &raw, env.Main.DB.Rebind(`SELECT content FROM review_items WHERE id = ?`), decidedID))
	require.Nil(t, raw)
	gi, err := ac.GetReviewItemWithResponse(ctx, decidedID)
	require.NoError(t, err)
	require.Nil(t, gi.JSON200.ReviewItem.ContentData)
	var kept int
	require.NoError(t, env.Main.DB.GetContext(ctx, &kept, env.Main.DB.Rebind(`SELECT COUNT(*) FROM review_items WHERE content IS NOT NULL`)))
	require.Equal(t, e.total-2, kept)

	// Deleting a queue deletes its items.
	dr, err := ac.DeleteReviewQueueWithResponse(ctx, e.spam.QueueId)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, dr.StatusCode(), "%s", dr.Body)
	requireStatus(t, env.call(http.MethodGet, "/v1/review-queues/"+e.spam.QueueId+"/items", e.admin, ""), http.StatusNotFound, domain.NotFound)
}
