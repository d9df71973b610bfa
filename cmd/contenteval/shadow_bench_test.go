package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/bench"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// TestShadowCost runs synchronous jobs of the 20-label benchmark policy with
// a shadow version evaluating each, for profiles of the shadow path:
//
//	CONTENTEVAL_BENCH_SHADOW=1 go test -run '^TestShadowCost$' -cpuprofile cpu.out ./cmd/contenteval/
func TestShadowCost(t *testing.T) {
	if os.Getenv("CONTENTEVAL_BENCH_SHADOW") == "" {
		t.Skip("a profiling aid; set CONTENTEVAL_BENCH_SHADOW=1")
	}
	env := startServerOn(t, persistencetest.SQLite, persistencetest.Open(t, persistencetest.SQLite), nil)
	ctx := context.Background()
	tok := env.PolicyFirst.Token
	c := env.Client(tok)
	pr, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "bench", Text: bench.PolicyText()})
	require.NoError(t, err)
	policyID := pr.JSON200.Policy.PolicyId
	shadowText := strings.Replace(bench.PolicyText(), "forbidden phrase 7\"", "forbidden phrase 7 again\"", 1)
	vr, err := c.CreatePolicyVersionWithResponse(ctx, policyID, client.CreatePolicyVersionRequest{Text: shadowText, Mode: ptr(client.POLICYVERSIONMODESHADOW)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, vr.StatusCode())
	v2 := vr.JSON200.PolicyVersion.PolicyVersionId
	text := strings.Repeat("the quick brown fox jumps over the lazy dog, then buys a forbidden phrase 7 ", 14)[:1024]
	const n = 3000
	start := time.Now()
	for range n {
		env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{textItem(text, nil)}})
	}
	t.Logf("%d jobs in %s", n, time.Since(start))
	waitForShadow(t, c, policyID, v2, n)
	t.Logf("and their shadow evaluations in %s", time.Since(start))
}
