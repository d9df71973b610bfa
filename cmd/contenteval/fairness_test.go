package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// stallingURL serves an image URL whose fetch never answers: it holds the
// worker that evaluates it until the item's budget cancels the fetch. Each
// request that arrives is sent on arrived (when the test is listening).
type stallingURL struct {
	URL     string
	arrived chan struct{}
	open    atomic.Int64 // requests being held
}

func newStallingURL(t *testing.T) *stallingURL {
	t.Helper()
	s := &stallingURL{arrived: make(chan struct{}, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		s.open.Add(1)
		defer s.open.Add(-1)
		select {
		case s.arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/slow.png"
	return s
}

// waitArrivals waits until n fetches have reached s.
func (s *stallingURL) waitArrivals(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for range n {
		select {
		case <-s.arrived:
		case <-timeout:
			t.Fatalf("fewer than %d fetches reached the stalling URL", n)
		}
	}
}

// fairnessDeadline is the item budget of these tests. B's job waits at most
// one budget for a worker (both hold A's jobs when it is queued), so a
// second keeps a second of margin under the 2 s bound on a loaded
// CI machine, while A's eight jobs still hold their workers far longer.
const fairnessDeadline = time.Second

// TestFairQueue is the acceptance test of fair claiming: account A queues 8 jobs
// that each take the whole item budget, then account B queues one small
// job; B's job completes in under 2 s, and A's jobs fail with
// EXECUTION_DEADLINE_EXCEEDED. With the queue in creation order B's job
// would wait for 4 rounds of A's jobs on 2 workers (6 s); without the item
// budget A's jobs would hold the workers until the fetch timeout (30 s).
func TestFairQueue(t *testing.T) {
	configure := func(c *Config) {
		c.AllowPrivateURLs, c.JobWorkers, c.ItemDeadline = true, 2, fairnessDeadline
	}
	forEachBackend(t, configure, func(t *testing.T, env *testEnv) {
		slow := newStallingURL(t)
		a := env.PolicyFirst
		b := env.newAccount("b", domain.AccountPolicyFirst)
		policyA, policyB := env.createPolicy(a.Token, "main"), env.createPolicy(b.Token, "main")

		var jobsA []string
		for range 8 {
			j := env.submit(a.Token, client.CreateJobRequest{PolicyId: policyA, ContentData: []client.ContentData{{ImageUrl: &slow.URL}}})
			jobsA = append(jobsA, j.JobUuid)
		}
		// Both workers are busy with A's jobs before B's job is queued.
		slow.waitArrivals(t, 2)

		start := time.Now()
		jb := env.submit(b.Token, client.CreateJobRequest{PolicyId: policyB, ContentData: []client.ContentData{textItem("buy now", nil)}})
		done := env.waitForJob(b.Token, jb.JobUuid)
		took := time.Since(start)
		require.Equal(t, client.JOBSTATUSCOMPLETED, done.Status)
		t.Logf("B's job completed in %s", took)
		require.Less(t, took, 2*time.Second, "B's job waited behind A's")

		pendingA := 0
		for _, id := range jobsA {
			r, err := env.Client(a.Token).GetJobWithResponse(context.Background(), id)
			require.NoError(t, err)
			if r.JSON200.Job.Status == client.JOBSTATUSPENDING {
				pendingA++
			}
		}
		require.Positive(t, pendingA, "A still had queued jobs when B's completed")

		for _, id := range jobsA {
			j := env.waitForJob(a.Token, id)
			require.Equal(t, client.JOBSTATUSFAILED, j.Status)
			require.Equal(t, client.JOBERRORREASONEXECUTIONDEADLINEEXCEEDED, j.Error.Reason)
			require.Equal(t, domain.ErrJobItemDeadline.Message, j.Error.Message)
		}
	})
}

// TestItemDeadline checks the item budget on every way an item is
// evaluated in a request: a synchronous job, the stream (the overrun item
// gets an error line, the others still stream) and label evaluation.
func TestItemDeadline(t *testing.T) {
	configure := func(c *Config) { c.AllowPrivateURLs, c.ItemDeadline = true, fairnessDeadline }
	forEachBackend(t, configure, func(t *testing.T, env *testEnv) {
		slow := newStallingURL(t)
		pf := env.PolicyFirst.Token
		policyID := env.createPolicy(pf, "main")

		t.Run("synchronous job", func(t *testing.T) {
			j := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
				ContentData: []client.ContentData{textItem("buy now", nil), {ImageUrl: &slow.URL}}})
			require.Equal(t, client.JOBSTATUSFAILED, j.Status)
			require.Equal(t, client.JOBERRORREASONEXECUTIONDEADLINEEXCEEDED, j.Error.Reason)
			require.Equal(t, domain.ErrJobItemDeadline.Message, j.Error.Message)
			require.Nil(t, j.Results)
		})

		t.Run("stream", func(t *testing.T) {
			body := mustJSON(t, map[string]any{"policyId": policyID, "contentData": []map[string]any{
				{"imageUrl": slow.URL}, {"text": "buy now"},
			}})
			resp, lines := env.stream(pf, body)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var msgs []map[string]map[string]any
			for {
				line, err := lines.ReadBytes('\n')
				if len(line) > 0 {
					var m map[string]map[string]any
					require.NoError(t, json.Unmarshal(line, &m), "%s", line)
					msgs = append(msgs, m)
				}
				if err != nil {
					break
				}
			}
			require.Len(t, msgs, 2)
			require.EqualValues(t, domain.DeadlineExceeded, msgs[0]["error"]["code"])
			require.Equal(t, domain.ErrJobItemDeadline.Message, msgs[0]["error"]["message"])
			require.NotNil(t, msgs[1]["result"], "the next item still streams")
			jobID := msgs[1]["result"]["jobUuid"].(string)
			j := env.waitForJob(pf, jobID)
			require.Equal(t, client.JOBSTATUSFAILED, j.Status)
			require.Equal(t, client.JOBERRORREASONEXECUTIONDEADLINEEXCEEDED, j.Error.Reason)
		})

		t.Run("label evaluation", func(t *testing.T) {
			tok := env.LabelFirst.Token
			l := env.createLabel(tok, map[string]any{"name": "Any"})
			v := env.createVersion(tok, l.LabelId, map[string]any{"text": `=("x")`})
			r := env.call(http.MethodPost, "/v1/labels/evaluate", tok, mustJSON(t, map[string]any{
				"contentData": map[string]any{"imageUrl": slow.URL}, "labelVersionIds": []string{v.LabelVersionId}}))
			m := requireStatus(t, r, http.StatusGatewayTimeout, domain.DeadlineExceeded)
			require.Equal(t, domain.ErrJobItemDeadline.Message, m["message"])
		})
	})
}
