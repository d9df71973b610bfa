package modelbackend

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
)

// decideByWords: the content meets a criterion when it holds the
// criterion's last word; the probability is 0.9 or 0.2 so logprob readings
// differ from labels.
func decideByWords(criterion, content string) float64 {
	f := strings.Fields(strings.ToLower(strings.Trim(criterion, ".?\"")))
	if len(f) > 0 && strings.Contains(strings.ToLower(content), strings.Trim(f[len(f)-1], ".?\"")) {
		return 0.9
	}
	return 0.2
}

func testBackend(t *testing.T, url, profile string, edit func(*Spec)) (*Backend, *prometheus.Registry) {
	t.Helper()
	s := Spec{Name: "b", URL: url, Model: "guard-1", Profile: profile}
	if edit != nil {
		edit(&s)
	}
	s.applyDefaults()
	reg := prometheus.NewRegistry()
	b := newBackend(s, newMetrics(reg), slog.New(slog.DiscardHandler))
	b.caller.wait = func(context.Context, time.Duration) error { return nil }
	return b, reg
}

func batchOf(text string, signals ...rules.SignalRequest) rules.SignalBatch {
	return rules.SignalBatch{Content: rules.Content{Text: text, Modality: "text"}, Signals: signals}
}

var (
	conceptViolence = rules.SignalRequest{Kind: rules.SignalConcept, Text: "violence", Source: `"violence"`}
	questionScam    = rules.SignalRequest{Kind: rules.SignalQuestion, Text: "Is it a scam?", Source: `QUESTION("Is it a scam?")`}
)

// Every profile against every server's answer shapes, with reasoning text
// before the answer or beside it: the score is the logprob reading where the
// server gives logprobs for that profile, else the label.
func TestProfilesAgainstServers(t *testing.T) {
	t.Parallel()
	logprobProfile := map[string]bool{"llama-guard": true, "shieldgemma": true, "granite-guardian": true}
	for _, flavor := range []modelbackendtest.Flavor{modelbackendtest.VLLM, modelbackendtest.LlamaCPP, modelbackendtest.Ollama, modelbackendtest.LMStudio} {
		for _, profile := range ProfileNames() {
			for _, reasoning := range []bool{false, true} {
				name := string(flavor) + "/" + profile
				if reasoning {
					name += "/reasoning"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					fake := modelbackendtest.New(flavor, decideByWords)
					defer fake.Close()
					fake.Reasoning = reasoning
					b, _ := testBackend(t, fake.BaseURL(), profile, nil)
					res, err := b.EvaluateSignals(context.Background(), firstN(batchOf("such violence here", conceptViolence, questionScam), b.BundleSize()))
					if err != nil {
						t.Fatal(err)
					}
					want, how := []float64{1, 0}, "label"
					if logprobProfile[profile] && (flavor == modelbackendtest.VLLM || flavor == modelbackendtest.LlamaCPP) {
						want, how = []float64{0.9, 0.2}, "logprob"
					}
					for i := range res.Scores {
						if math.Abs(res.Scores[i]-want[i]) > 1e-9 || res.Notes[i] != "model guard-1, "+how {
							t.Errorf("signal %d: %v %q, want %v (model guard-1, %s)", i, res.Scores[i], res.Notes[i], want[i], how)
						}
					}
					if res.Usage.InputTokens != 120 {
						t.Errorf("usage %d, want the server's 120", res.Usage.InputTokens)
					}
				})
			}
		}
	}
}

func firstN(b rules.SignalBatch, n int) rules.SignalBatch {
	b.Signals = b.Signals[:min(n, len(b.Signals))]
	return b
}

func TestFailuresRetriesAndFallback(t *testing.T) {
	t.Parallel()
	deadURL := func() string { return modelbackendtest.HangUp(t) }
	cases := []struct {
		name      string
		failure   modelbackendtest.Failure
		dead      bool
		edit      func(*Spec)
		calls     int64
		score     float64
		note      string
		waits     []time.Duration // the waits between attempts, when checked
		errReason string
	}{
		{name: "429 with Retry-After is retried after the server's wait",
			failure: modelbackendtest.Failure{Status: 429, RetryAfter: "7", Times: 2}, calls: 3, score: 1, note: "model guard-1, label",
			waits: []time.Duration{7 * time.Second, 7 * time.Second}},
		{name: "500 until the retries run out fails the signal",
			failure: modelbackendtest.Failure{Status: 500}, calls: 3, score: -1, note: "model guard-1 failed: HTTP 500", errReason: "http_5xx"},
		{name: "a 400 is not retried",
			failure: modelbackendtest.Failure{Status: 400}, calls: 1, score: -1, note: "model guard-1 failed: HTTP 400", errReason: "http_4xx"},
		{name: "malformed JSON is not retried",
			failure: modelbackendtest.Failure{Malformed: true}, calls: 1, score: -1, note: "model guard-1 failed: malformed answer: not JSON", errReason: "malformed"},
		{name: "an answer slower than the timeout",
			failure: modelbackendtest.Failure{Delay: 5 * time.Second}, edit: func(s *Spec) { s.Timeout.Duration = 50 * time.Millisecond; zero := 0; s.Retries = &zero },
			calls: 1, score: -1, note: "model guard-1 failed: no answer within 50ms", errReason: "timeout"},
		{name: "a dead port", dead: true, calls: 0, score: -1, note: "model guard-1 failed: unreachable", errReason: "unreachable"},
		{name: "onFailure builtin falls back to the lexical concept and says so",
			failure: modelbackendtest.Failure{Status: 500}, edit: func(s *Spec) { s.OnFailure = OnFailureBuiltin },
			calls: 3, score: 1, note: "builtin fallback: model guard-1 failed: HTTP 500", errReason: "http_5xx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := modelbackendtest.New(modelbackendtest.LMStudio, decideByWords)
			defer fake.Close()
			fake.Fail(tc.failure)
			url := fake.BaseURL()
			if tc.dead {
				url = deadURL()
			}
			b, reg := testBackend(t, url, "generic", tc.edit)
			var mu sync.Mutex
			var waits []time.Duration
			b.caller.wait = func(_ context.Context, d time.Duration) error {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
				return nil
			}
			res, err := b.EvaluateSignals(context.Background(), batchOf("such violence here", conceptViolence))
			if err != nil {
				t.Fatal(err)
			}
			if res.Scores[0] != tc.score || !strings.HasPrefix(res.Notes[0], tc.note) {
				t.Errorf("got %v %q, want %v %q", res.Scores[0], res.Notes[0], tc.score, tc.note)
			}
			if got := fake.Calls(); got != tc.calls {
				t.Errorf("%d calls, want %d", got, tc.calls)
			}
			if tc.waits != nil && !slices.Equal(waits, tc.waits) {
				t.Errorf("waits %v, want %v", waits, tc.waits)
			}
			if tc.errReason != "" {
				if n := testutil.ToFloat64(b.metrics.errors.WithLabelValues("b", tc.errReason)); n != 1 {
					t.Errorf("errors{reason=%s} = %v, want 1", tc.errReason, n)
				}
			}
			_ = reg
		})
	}
}

// A Retry-After past the caller's deadline gives up at once instead of
// answering too late.
func TestRetryAfterPastTheDeadlineGivesUp(t *testing.T) {
	t.Parallel()
	fake := modelbackendtest.New(modelbackendtest.VLLM, decideByWords)
	defer fake.Close()
	fake.Fail(modelbackendtest.Failure{Status: 429, RetryAfter: "20"})
	b, _ := testBackend(t, fake.BaseURL(), "generic", nil)
	waited := false
	b.caller.wait = func(context.Context, time.Duration) error { waited = true; return nil }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := b.caller.call(ctx, "", "/chat/completions", map[string]any{})
	if err == nil || waited || fake.Calls() != 1 {
		t.Fatalf("err %v, waited %v, calls %d: want an immediate failure", err, waited, fake.Calls())
	}
}

func TestCircuitBreakerFailsFast(t *testing.T) {
	t.Parallel()
	fake := modelbackendtest.New(modelbackendtest.VLLM, decideByWords)
	defer fake.Close()
	fake.Fail(modelbackendtest.Failure{Status: 503})
	b, _ := testBackend(t, fake.BaseURL(), "generic", func(s *Spec) { zero := 0; s.Retries = &zero; s.CacheTTL = &Duration{} })
	for i := range breakerFailures {
		res, _ := b.EvaluateSignals(context.Background(), batchOf("text "+string(rune('a'+i)), conceptViolence))
		if res.Scores[0] != -1 {
			t.Fatalf("call %d scored %v", i, res.Scores[0])
		}
	}
	res, _ := b.EvaluateSignals(context.Background(), batchOf("another text", conceptViolence))
	if fake.Calls() != breakerFailures || !strings.Contains(res.Notes[0], "circuit open") {
		t.Fatalf("calls %d, note %q: the breaker should have failed fast", fake.Calls(), res.Notes[0])
	}
}

func TestCacheAndCoalescing(t *testing.T) {
	t.Parallel()
	fake := modelbackendtest.New(modelbackendtest.VLLM, decideByWords)
	defer fake.Close()
	fake.Latency = 100 * time.Millisecond
	b, reg := testBackend(t, fake.BaseURL(), "llama-guard", nil)
	// Eight evaluations ask the same thing at once: one call.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var tokens int64
	for range 8 {
		wg.Go(func() {
			res, err := b.EvaluateSignals(context.Background(), batchOf("violence!", conceptViolence))
			if err != nil || res.Scores[0] != 0.9 {
				t.Errorf("coalesced: %v %v", res.Scores, err)
			}
			mu.Lock()
			tokens += res.Usage.InputTokens
			mu.Unlock()
		})
	}
	wg.Wait()
	if fake.Calls() != 1 || tokens != 120 {
		t.Fatalf("%d calls, %d tokens billed: identical in-flight calls must be made and billed once", fake.Calls(), tokens)
	}
	// A repeat is a cache hit: no call, no tokens.
	res, _ := b.EvaluateSignals(context.Background(), batchOf("violence!", conceptViolence))
	if fake.Calls() != 1 || res.Usage.InputTokens != 0 || res.Scores[0] != 0.9 {
		t.Fatalf("repeat: %d calls, %+v", fake.Calls(), res)
	}
	// Other content, another global context or another signal is a miss.
	for _, batch := range []rules.SignalBatch{
		batchOf("violence?", conceptViolence),
		{Content: rules.Content{Text: "violence!"}, GlobalContext: "a game forum", Signals: []rules.SignalRequest{conceptViolence}},
		batchOf("violence!", questionScam),
	} {
		if _, err := b.EvaluateSignals(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	if fake.Calls() != 4 {
		t.Fatalf("%d calls, want 4", fake.Calls())
	}
	// The cache is per account (no answer served to, or timed by, another
	// account), and bypassCache asks again.
	other := batchOf("violence!", conceptViolence)
	other.Account = "another-account"
	if _, err := b.EvaluateSignals(context.Background(), other); err != nil || fake.Calls() != 5 {
		t.Fatalf("another account's ask: %d calls, %v", fake.Calls(), err)
	}
	other.BypassCache = true
	if _, err := b.EvaluateSignals(context.Background(), other); err != nil || fake.Calls() != 6 {
		t.Fatalf("bypassCache: %d calls, %v", fake.Calls(), err)
	}
	if n := testutil.ToFloat64(b.metrics.cacheHits.WithLabelValues("b")); n != 1 {
		t.Errorf("cache hits %v, want 1", n)
	}
	if n, err := testutil.GatherAndCount(reg, "contenteval_model_backend_calls_total"); err != nil || n == 0 {
		t.Errorf("calls metric: %d, %v", n, err)
	}
}

// The concurrency cap holds however many evaluations ask at once.
func TestConcurrencyCap(t *testing.T) {
	t.Parallel()
	fake := modelbackendtest.New(modelbackendtest.VLLM, decideByWords)
	defer fake.Close()
	fake.Latency = 20 * time.Millisecond
	b, _ := testBackend(t, fake.BaseURL(), "llama-guard", func(s *Spec) { s.MaxConcurrency = 3 })
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			_, _ = b.EvaluateSignals(context.Background(), batchOf("text "+strings.Repeat("x", i), conceptViolence))
		})
	}
	wg.Wait()
	if got := fake.MaxInFlight(); got > 3 || got == 0 {
		t.Fatalf("max in flight %d, want at most 3", got)
	}
}

func TestNoReadableContentIsNotACall(t *testing.T) {
	t.Parallel()
	fake := modelbackendtest.New(modelbackendtest.VLLM, decideByWords)
	defer fake.Close()
	b, _ := testBackend(t, fake.BaseURL(), "generic", nil)
	img := rules.SignalBatch{Content: rules.Content{Image: &rules.ImageFeatures{}, ImageBytes: []byte("png"), ImageType: "image/png", Modality: "image"}, Signals: []rules.SignalRequest{conceptViolence}}
	res, _ := b.EvaluateSignals(context.Background(), img)
	if res.Scores[0] != -1 || fake.Calls() != 0 {
		t.Fatalf("an image without text to a text-only backend: %+v, %d calls", res, fake.Calls())
	}
	vision, _ := testBackend(t, fake.BaseURL(), "generic", func(s *Spec) { s.Vision = true })
	res, _ = vision.EvaluateSignals(context.Background(), img)
	if res.Scores[0] == -1 || fake.Calls() != 1 {
		t.Fatalf("vision backend: %+v, %d calls", res, fake.Calls())
	}
	msgs := fake.Requests()[0]["messages"].([]any)
	parts := msgs[1].(map[string]any)["content"].([]any)
	url := parts[len(parts)-1].(map[string]any)["image_url"].(map[string]any)["url"].(string)
	if url != "data:image/png;base64,cG5n" {
		t.Errorf("image sent as %q", url)
	}
}
