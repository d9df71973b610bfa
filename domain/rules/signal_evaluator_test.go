package rules

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
)

// fakeEvaluator records batches and answers from a table.
type fakeEvaluator struct {
	mu      sync.Mutex
	size    int
	batches [][]SignalRequest
	answers map[string]float64 // by Source; missing -> 0
	fail    bool
}

func (f *fakeEvaluator) BundleSize() int { return f.size }

func (f *fakeEvaluator) EvaluateSignals(_ context.Context, b SignalBatch) (SignalScores, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, b.Signals)
	if f.fail {
		return SignalScores{}, errors.New("backend down")
	}
	out := SignalScores{Usage: TokenUsage{InputTokens: 100}}
	for _, s := range b.Signals {
		out.Scores = append(out.Scores, f.answers[s.Source])
	}
	return out, nil
}

func TestSignalEvaluatorSeam(t *testing.T) {
	t.Parallel()
	src := `LABEL "A" {
    "violence" AND =("now")
    QUESTION("Is it a threat?")
    "weapon" [USED AGAINST] "a person"
    =("exact only")
}`
	p := mustCompile(t, src, CompileOptions{})
	f := &fakeEvaluator{size: 2, answers: map[string]float64{`QUESTION("Is it a threat?")`: 0.9, `"violence"`: 0.7}}
	r := eval(t, p, Content{Text: "do it now"}, EvalOptions{Evaluator: f, GlobalContext: "a forum"})
	// Bundles go out concurrently: the signals bundle first, then the contexts.
	sort.Slice(f.batches, func(i, j int) bool { return len(f.batches[i]) > len(f.batches[j]) })
	if len(f.batches) != 2 || len(f.batches[0]) != 2 || len(f.batches[1]) != 1 {
		t.Fatalf("batches %v, want sizes 2 and 1", f.batches)
	}
	ctxReq := f.batches[1][0]
	if ctxReq.Kind != SignalContext || ctxReq.Operator != "USED AGAINST" || ctxReq.Text != `"weapon"` || ctxReq.Right != `"a person"` {
		t.Errorf("context request %+v", ctxReq)
	}
	as := r.Sections[0].Assertions
	if !near(as[0].Score, 0.7) || !near(as[1].Score, 0.9) || as[2].Score != 0 || as[3].Score != 0 {
		t.Errorf("scores %+v", as)
	}
	if strings.Contains(as[0].Message, "lexical") {
		t.Error("a backend-scored concept is labelled lexical")
	}
	if r.TokenUsage.InputTokens != 200 || r.TokenUsage.BilledTokens != int64(math.Ceil(200*r.TokenUsage.Multiplier)) {
		t.Errorf("token usage %+v", r.TokenUsage)
	}
	// A backend failure fails the signals it was asked for, not the evaluation.
	r = eval(t, p, Content{Text: "do it now"}, EvalOptions{Evaluator: &fakeEvaluator{size: 10, fail: true}})
	if r.Sections[0].Result != OutcomeFailed || r.Result != OutcomeFailed {
		t.Errorf("backend failure: %s / %s", r.Sections[0].Result, r.Result)
	}
	// The built-in evaluator through the seam agrees with the direct path.
	direct := eval(t, p, Content{Text: "they attack now with a knife against him"}, EvalOptions{})
	seam := eval(t, p, Content{Text: "they attack now with a knife against him"}, EvalOptions{Evaluator: BuiltinEvaluator{}})
	for i := range direct.Sections[0].Assertions {
		if d, s := direct.Sections[0].Assertions[i].Score, seam.Sections[0].Assertions[i].Score; !near(d, s) {
			t.Errorf("rule %d: direct %v, via seam %v", i, d, s)
		}
	}
	// Cancellation is an error, not a report.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Evaluate(ctx, Content{Text: "x"}, EvalOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestTokenCountsAndStats(t *testing.T) {
	t.Parallel()
	if got := CountTokens("Hello, world!"); got != 4 {
		t.Errorf("CountTokens = %d, want 4 (o200k_base)", got)
	}
	if CountTokens("") != 0 {
		t.Error("empty text has tokens")
	}
	p := mustCompile(t, `LABEL "A" {
    =("kill") OR ~("kill")
    "threat" [AGAINST] "person"
    QUESTION("Is it bad?") AND NOT ("x" OR "y")
}`, CompileOptions{})
	s := p.Stats()
	if s.SignalCount != 7 {
		t.Errorf("SignalCount = %d, want 7", s.SignalCount)
	}
	tc := s.TokenCounts
	if tc.DSLTokenCount <= 0 || tc.SignalTokens <= 0 || tc.SignalSpecialTokens <= 0 || tc.ContentSpecialTokens <= 0 || s.TotalSignalTokens != tc.SignalTokens+tc.SignalSpecialTokens {
		t.Errorf("token counts %+v", s)
	}
	// exact 1 + fuzzy 1 + 4 concepts x2 + question 3 + one context 2 + rule depths (1 + 0 + 3)
	if want := 1 + 1 + 8 + 3 + 2 + 4.0; s.ComplexityScore != want {
		t.Errorf("ComplexityScore = %v, want %v", s.ComplexityScore, want)
	}
	if g := p.StatsWithGlobalContext("You moderate a forum for teenagers."); g.TokenCounts.GlobalContextTokens <= 0 {
		t.Error("no global context tokens")
	}
	r := eval(t, p, Content{Text: "Hello, world!"}, EvalOptions{CountTokens: true})
	if r.TokenUsage.InputTokens != 4 || r.TokenUsage.Multiplier <= 1 {
		t.Errorf("usage %+v", r.TokenUsage)
	}
	e := eval(t, p, Content{Text: "Hello, world!"}, EvalOptions{CountTokens: true, Expedited: true})
	if math.Abs(e.TokenUsage.Multiplier-r.TokenUsage.Multiplier*1.5) > 0.002 || e.TokenUsage.BilledTokens < r.TokenUsage.BilledTokens {
		t.Errorf("expedited usage %+v vs %+v", e.TokenUsage, r.TokenUsage)
	}
	simple := mustCompile(t, `=("x")`, CompileOptions{LabelName: "L"})
	if m := simple.multiplier(false); m >= r.TokenUsage.Multiplier {
		t.Errorf("multiplier does not grow with complexity: %v vs %v", m, r.TokenUsage.Multiplier)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	c := NewCache(2)
	p1, err := c.GetOrCompile("v1", `=("a")`, CompileOptions{LabelName: "A"})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Get("v1"); !ok || got != p1 {
		t.Fatal("v1 not cached")
	}
	if _, err := c.GetOrCompile("bad", `=(`, CompileOptions{LabelName: "A"}); err == nil {
		t.Fatal("bad text compiled")
	}
	if _, ok := c.Get("bad"); ok {
		t.Error("compile error cached")
	}
	c.GetOrCompile("v2", `=("b")`, CompileOptions{LabelName: "A"})
	c.Get("v1") // v1 is now the most recently used
	c.GetOrCompile("v3", `=("c")`, CompileOptions{LabelName: "A"})
	if _, ok := c.Get("v2"); ok {
		t.Error("least recently used plan not evicted")
	}
	if _, ok := c.Get("v1"); !ok || c.Len() != 2 {
		t.Error("recently used plan evicted")
	}
	// Concurrent callers for one new version share one compilation.
	var wg sync.WaitGroup
	plans := make([]*Plan, 8)
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plans[i], _ = c.GetOrCompile("v4", `=("d")`, CompileOptions{LabelName: "A"})
		}()
	}
	wg.Wait()
	for _, p := range plans {
		if p != plans[0] || p == nil {
			t.Fatal("concurrent GetOrCompile returned different plans")
		}
	}
}

func TestConcurrentEvaluate(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, `LABEL "A" {
    ~("idiot") AND SENTIMENT("negative")
    "threat" [AGAINST] "person"
    REGEX("\d{3}-\d{4}")
}`, CompileOptions{})
	texts := []string{"you 1d10t, I hate you", "I will kill him", "call 555-1234", ""}
	want := make([]*Report, len(texts))
	for i, s := range texts {
		want[i] = eval(t, p, Content{Text: s}, EvalOptions{})
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				i := k % len(texts)
				r, err := p.Evaluate(context.Background(), Content{Text: texts[i]}, EvalOptions{CountTokens: k%5 == 0})
				if err != nil || r.Sections[0].Score != want[i].Sections[0].Score {
					t.Errorf("concurrent evaluation of %q differs", texts[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestWarm(t *testing.T) {
	t.Parallel()
	Warm()
	Warm() // idempotent
	if !isDictWord("hello") || len(lexGroups) == 0 || vader == nil || CountTokens("hi") != 1 {
		t.Error("Warm left data unloaded")
	}
}
