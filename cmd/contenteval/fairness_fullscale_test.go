package main

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// fullScaleRounds runs round five times on SQLite, each on a fresh server
// with 8 workers, and logs the median of the waits it returns. Each round
// is a subtest so that its server, still busy with A's work, is shut down
// before the next round begins instead of competing with it for the CPU.
func fullScaleRounds(t *testing.T, round func(t *testing.T, env *testEnv) time.Duration) {
	if os.Getenv("CONTENTEVAL_FAIRNESS_FULL") == "" {
		t.Skip("a measurement run by hand: set CONTENTEVAL_FAIRNESS_FULL=1")
	}
	var waits []time.Duration
	for n := range 5 {
		t.Run(fmt.Sprintf("round%d", n), func(t *testing.T) {
			env := startServer(t, persistencetest.Backends(t)[0], func(c *Config) { c.JobWorkers = 8 })
			w := round(t, env)
			t.Logf("B's job completed after %s", w)
			waits = append(waits, w)
		})
	}
	require.Len(t, waits, 5)
	slices.Sort(waits)
	t.Logf("median of 5: %s (all: %v)", waits[2], waits)
}

// bWait queues account B's one-item job and returns how long it took to
// complete.
func bWait(t *testing.T, env *testEnv) time.Duration {
	b := env.newAccount("b", domain.AccountPolicyFirst)
	policyB := env.createPolicy(b.Token, "main")
	start := time.Now()
	jb := env.submit(b.Token, client.CreateJobRequest{PolicyId: policyB, ContentData: []client.ContentData{textItem("buy now", nil)}})
	require.Equal(t, client.JOBSTATUSCOMPLETED, env.waitForJob(b.Token, jb.JobUuid).Status)
	return time.Since(start)
}

// TestFairQueueFullScale measures, by hand, how long a one-item job of
// account B waits behind account A's 16 jobs of 8 slow items (255 KiB of
// words each under slowRegex), claimed by all 8 workers before B's job
// arrives.
// CONTENTEVAL_FAIRNESS_FULL=1 go test -run TestFairQueueFullScale -v ./cmd/contenteval/
func TestFairQueueFullScale(t *testing.T) {
	fullScaleRounds(t, func(t *testing.T, env *testEnv) time.Duration {
		a := env.PolicyFirst
		slowPolicy := fmt.Sprintf("LABEL \"Slow\": \"review\" {\n  REGEX(%q)\n}\n", slowRegex)
		r, err := env.Client(a.Token).CreatePolicyWithResponse(t.Context(), client.CreatePolicyRequest{PolicyKey: "slow", Text: slowPolicy})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		for range 16 {
			content := make([]client.ContentData, 8)
			for i := range content {
				content[i] = textItem(slowText(255), nil)
			}
			env.submit(a.Token, client.CreateJobRequest{PolicyId: r.JSON200.Policy.PolicyId, ContentData: content})
		}
		env.waitRunning(domain.JobTypeStandard, 8)
		return bWait(t, env)
	})
}

// TestFairQueueFullScale_DatasetRuns measures, by hand, how long a one-item
// job of account B waits behind account A's 3 dataset runs of a label with
// 1,000 examples of 64 KiB of words under slowRegex, whose chunks hold all
// 8 workers when B's job arrives.
// CONTENTEVAL_FAIRNESS_FULL=1 go test -run TestFairQueueFullScale_DatasetRuns -v ./cmd/contenteval/
func TestFairQueueFullScale_DatasetRuns(t *testing.T) {
	fullScaleRounds(t, func(t *testing.T, env *testEnv) time.Duration {
		c, tok := env.labelClient(), env.LabelFirst.Token
		label := env.createLabel(tok, map[string]any{"name": "Slow"})
		v := env.createVersion(tok, label.LabelId, map[string]any{"text": fmt.Sprintf("REGEX(%q)", slowRegex)})
		words := slowText(64)
		const examples, perCall = 1000, 250 // a call of 1,000 would pass the 32 MiB body limit
		for from := 0; from < examples; from += perCall {
			in := make([]client.DatasetExampleInput, perCall)
			for i := range in {
				text := fmt.Sprintf("example %s %s", letters(from+i), words)
				in[i] = client.DatasetExampleInput{ContentData: client.ContentData{Text: &text}, ExpectedOutcome: client.EVALUATIONRESULTFALSE}
			}
			r, err := c.CreateDatasetExamplesWithResponse(t.Context(), label.LabelId, client.CreateDatasetExamplesRequest{Examples: in})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		}
		for range 3 {
			startRun(t, c, label.LabelId, v.LabelVersionId, nil)
		}
		env.waitRunning(domain.JobTypeDatasetRun, 8)
		return bWait(t, env)
	})
}
