package main

import (
	"context"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// heldModel is a fake model server whose answers wait until the test
// releases them: a model slower than any wait cap, without a timing.
type heldModel struct {
	*httptest.Server
	mu    sync.Mutex
	round *heldRound
}

// heldRound is the answers from one Hold to the next.
type heldRound struct {
	release  chan struct{} // closed: answers go through
	answered atomic.Int64
}

func newHeldModel(t *testing.T) *heldModel {
	fake := modelbackendtest.New(modelbackendtest.VLLM, guardDecides)
	t.Cleanup(fake.Close)
	m := &heldModel{round: &heldRound{release: make(chan struct{})}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		round := m.round
		m.mu.Unlock()
		select {
		case <-round.release:
		case <-r.Context().Done():
			return
		}
		round.answered.Add(1) // before the answer, so that a finished job has counted it
		fake.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// Hold makes the answers from now on wait for the next Release (the
// answers held until now go through).
func (m *heldModel) Hold() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.round.releaseOnce()
	m.round = &heldRound{release: make(chan struct{})}
}

// Release lets the held answers, and later ones until Hold, through.
func (m *heldModel) Release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.round.releaseOnce()
}

// Answered counts the answers given since Hold.
func (m *heldModel) Answered() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.round.answered.Load()
}

func (r *heldRound) releaseOnce() {
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

// configure makes m the server's default model backend.
func (m *heldModel) configure(t *testing.T) func(*Config) {
	file := filepath.Join(t.TempDir(), "backends.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `default: guard
backends:
  - name: guard
    url: %s/v1
    model: llama-guard-3-8b
    profile: llama-guard
    maxPromptBytes: 131072 # the large case's 80 KiB reaches the model
`, m.URL), 0o600))
	return func(c *Config) {
		batchConfig(c)
		c.BackendsFile = file
	}
}

// TestSyncJobOutlivesWaitCap: a synchronous job whose model has not
// answered when the wait cap passes is answered at the cap in its current
// state, RUNNING, is listed RUNNING while it runs, and completes in the
// background once the model answers. The cases are a job small enough to
// be evaluated before it is stored, and one that is not.
func TestSyncJobOutlivesWaitCap(t *testing.T) {
	const policyText = `LABEL "Threat" {
    "threat of violence"
}
`
	cases := []struct {
		name string
		text string
	}{
		{"small text", "a threat of violence"},
		{"large text", "a threat of violence " + strings.Repeat("padding ", 80<<10/8)},
	}
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			model := newHeldModel(t)
			configure := model.configure(t)
			env := startServer(t, b, func(c *Config) {
				configure(c)
				c.JobWaitCap = 300 * time.Millisecond
			})
			// Cleanups run last first: the held answers go before the
			// server shuts down (it waits for its jobs) and the model closes
			// (it waits for its answers).
			t.Cleanup(model.Release)
			tok := env.PolicyFirst.Token
			api := env.Client(tok)
			pr, err := api.CreatePolicyWithResponse(t.Context(), client.CreatePolicyRequest{PolicyKey: "held", Text: policyText})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					model.Hold()
					requireSyncJobOutlivesWaitCap(t, env, model, pr.JSON200.Policy.PolicyId, tc.text)
				})
			}
		})
	}
}

// requireSyncJobOutlivesWaitCap submits text with waitForCompletion while
// model holds its answers, and checks the job before and after releasing
// them.
func requireSyncJobOutlivesWaitCap(t *testing.T, env *testEnv, model *heldModel, policyID, text string) {
	api := env.Client(env.PolicyFirst.Token)
	type answer struct {
		r   *client.CreateJobHTTPResponse
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := api.CreateJobWithResponse(context.Background(), client.CreateJobRequest{
			PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{textItem(text, nil)},
		})
		answered <- answer{r, err}
	}()

	// Listed RUNNING while the model holds its answer, before the cap too.
	id := waitForListedRunning(t, api)

	var got answer
	select {
	case got = <-answered:
	case <-time.After(60 * time.Second): // generous: a held request is the failure
		model.Release()
		t.Fatal("the synchronous request is held past its wait cap while the model has not answered")
	}
	require.NoError(t, got.err)
	require.Equal(t, http.StatusOK, got.r.StatusCode(), "%s", got.r.Body)
	specChecked(t, got.r.HTTPResponse, got.r.Body)
	require.Zero(t, model.Answered(), "the model has answered nothing yet")
	job := got.r.JSON200.Job
	require.Equal(t, id, job.JobUuid)
	require.Equal(t, client.JOBSTATUSRUNNING, job.Status)
	require.Nil(t, job.Results, "an unfinished job carries no results")

	one, err := api.GetJobWithResponse(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, one.StatusCode(), "%s", one.Body)
	require.Equal(t, client.JOBSTATUSRUNNING, one.JSON200.Job.Status)

	model.Release()
	done := env.waitForJob(env.PolicyFirst.Token, id)
	require.Equal(t, client.JOBSTATUSCOMPLETED, done.Status, "%+v", done.Error)
	require.NotNil(t, done.Results)
	require.Len(t, *done.Results, 1)
	require.NotZero(t, model.Answered())
}

// waitForListedRunning polls GET /v1/jobs until it lists a RUNNING job
// and returns the job's id.
func waitForListedRunning(t *testing.T, api *client.ClientWithResponses) string {
	t.Helper()
	var id string
	// generous: -race on a busy 2-core machine
	testwait.For(t, 30*time.Second, "a running job to be listed", func() (bool, error) {
		r, err := api.ListJobsWithResponse(t.Context(), &client.ListJobsParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		// Any listed job, not the first: the cases' jobs may share a
		// millisecond of the server's clock, and then the newest-first
		// order between them is their ids' random part. The earlier
		// case's job has completed.
		for _, j := range r.JSON200.Jobs {
			if j.Status == client.JOBSTATUSRUNNING {
				id = j.JobUuid
				return true, nil
			}
		}
		return false, fmt.Errorf("listed: %s", r.Body)
	})
	return id
}
