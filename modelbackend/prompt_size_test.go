package modelbackend

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
)

// A prompt over the backend's maxPromptBytes is refused before any call,
// and the report says so: never sent whole, never silently cut.
func TestPromptSizeCap(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 2000) + "violence" // 10 KiB: the violence is at the end
	cases := []struct {
		name     string
		edit     func(*Spec)
		text     string
		calls    int64
		score    float64
		notePart string
		refusals float64
	}{
		{name: "within the cap", edit: func(s *Spec) { s.MaxPromptBytes = 16 << 10 }, text: long, calls: 1, score: 0.9, notePart: "model guard-1, logprob"},
		{name: "over the cap", edit: func(s *Spec) { s.MaxPromptBytes = 4 << 10 }, text: long, score: -1,
			notePart: "model guard-1 failed: content, context and criteria of 10016 bytes; this backend takes at most 4096 (maxPromptBytes)", refusals: 1},
		{name: "over the cap, onFailure builtin", edit: func(s *Spec) { s.MaxPromptBytes = 4 << 10; s.OnFailure = OnFailureBuiltin }, text: long, score: 1,
			notePart: "builtin fallback: model guard-1 failed: content, context and criteria of 10016 bytes", refusals: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := modelbackendtest.New(modelbackendtest.VLLM, decideByWords)
			defer fake.Close()
			b, _ := testBackend(t, fake.BaseURL(), "llama-guard", tc.edit)
			res, err := b.EvaluateSignals(context.Background(), batchOf(tc.text, conceptViolence))
			if err != nil {
				t.Fatal(err)
			}
			if res.Scores[0] != tc.score || !strings.Contains(res.Notes[0], tc.notePart) || fake.Calls() != tc.calls {
				t.Fatalf("%v %q after %d calls, want %v %q after %d", res.Scores[0], res.Notes[0], fake.Calls(), tc.score, tc.notePart, tc.calls)
			}
			if n := testutil.ToFloat64(b.metrics.errors.WithLabelValues("b", "too_large")); n != tc.refusals {
				t.Errorf("errors{reason=too_large} = %v, want %v", n, tc.refusals)
			}
		})
	}
}
