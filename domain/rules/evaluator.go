package rules

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// SignalRequest is one signal sent to a model backend.
type SignalRequest struct {
	Kind SignalKind // SignalConcept, SignalQuestion or SignalContext
	// Text is the concept or question; for a context condition, the left operand as
	// written in the rule language.
	Text string
	// Operator and Right are set for context conditions: `Text [Operator] Right`.
	Operator string
	Right    string
	// Source is the signal exactly as it would be written in a rule, for prompts that
	// prefer to show the rule language itself.
	Source string
}

// SignalBatch is one call to a model backend: up to BundleSize signals about one
// content item.
type SignalBatch struct {
	Content       Content
	GlobalContext string
	Signals       []SignalRequest
	// Account and BypassCache are EvalOptions' (a backend caches and
	// shares its server per account).
	Account     string
	BypassCache bool
}

// SignalScores answers a SignalBatch: one score per signal, in order, each in [0, 1] or
// -1 when the backend could not decide; Usage is the backend's own token count.
type SignalScores struct {
	Scores []float64
	// Notes, when given, has one entry per signal saying how its score was
	// read ("model llama-guard-3-8b, logprob"; also on failure: "model X
	// failed: timeout"); every rule that uses the signal ends its report
	// message with it in parentheses.
	Notes []string
	Usage TokenUsage
}

// SignalEvaluator is the seam for a model backend. Evaluate sends it every concept,
// question and context signal of a plan, BundleSize at a time; exact, fuzzy, regex,
// sentiment and hash signals stay with the built-in evaluators. An error fails the
// batch's signals (score -1), which fails the sections that depend on them rather than
// the whole evaluation.
type SignalEvaluator interface {
	BundleSize() int
	EvaluateSignals(ctx context.Context, batch SignalBatch) (SignalScores, error)
}

// BuiltinEvaluator is the default behaviour expressed through the seam: lexical
// concepts, proximity contexts, and -1 for questions. Evaluate uses the same logic
// directly when no evaluator is given; this type exists so a backend can fall back to
// it per signal and so tests can exercise the seam without a model.
type BuiltinEvaluator struct{}

// BundleSize implements SignalEvaluator.
func (BuiltinEvaluator) BundleSize() int { return 16 }

// EvaluateSignals implements SignalEvaluator by compiling each signal as a one-rule
// label and evaluating it without an evaluator.
func (BuiltinEvaluator) EvaluateSignals(ctx context.Context, b SignalBatch) (SignalScores, error) {
	out := SignalScores{Scores: make([]float64, len(b.Signals))}
	for i, s := range b.Signals {
		plan, err := Compile(s.Source, CompileOptions{LabelName: "signal"})
		if err != nil {
			return out, fmt.Errorf("rules: builtin evaluator: %w", err)
		}
		rep, err := plan.Evaluate(ctx, b.Content, EvalOptions{})
		if err != nil {
			return out, err
		}
		out.Scores[i] = rep.Sections[0].Score
	}
	return out, nil
}

type pending struct {
	req    SignalRequest
	target *float64
	note   *string
}

// askEvaluator scores the plan's model signals that can still change a
// label's result (cost order), in bundles sent at once, and returns the
// input tokens the backend reported. The others are left skipped in st.work.
func (st *evalState) askEvaluator(ctx context.Context, c Content, opts EvalOptions) (int64, error) {
	p := st.p
	w := &modelWork{
		pendingSig: make([]bool, len(p.signals)), neededSig: make([]bool, len(p.signals)),
		pendingCtx: make([]bool, len(p.contexts)), neededCtx: make([]bool, len(p.contexts)),
	}
	for i, s := range p.signals {
		w.pendingSig[i] = (s.kind == SignalConcept || s.kind == SignalQuestion) && s.direct
	}
	for i := range p.contexts {
		w.pendingCtx[i] = true
	}
	st.planModelWork(w)
	st.work = w
	st.sigNotes = make([]string, len(p.signals))
	st.ctxNotes = make([]string, len(p.contexts))
	var work []pending
	for i, s := range p.signals {
		if w.neededSig[i] {
			work = append(work, pending{req: SignalRequest{Kind: s.kind, Text: s.text, Source: s.source()}, target: &st.sig[i].score, note: &st.sigNotes[i]})
		}
	}
	for i, cp := range p.contexts {
		if w.neededCtx[i] {
			l, r := p.signals[cp.left], p.signals[cp.right]
			work = append(work, pending{req: SignalRequest{Kind: SignalContext, Text: l.source(), Operator: cp.op, Right: r.source(), Source: cp.src}, target: &st.ctx[i].score, note: &st.ctxNotes[i]})
		}
	}
	size := opts.Evaluator.BundleSize()
	if size <= 0 {
		size = 8
	}
	// Bundles go out together: the backend caps its own concurrency, and a
	// label's latency is then one call rather than one per bundle.
	var tokens atomic.Int64
	var wg sync.WaitGroup
	for start := 0; start < len(work); start += size {
		chunk := work[start:min(start+size, len(work))]
		wg.Go(func() { tokens.Add(askBundle(ctx, opts, c, chunk)) })
	}
	wg.Wait()
	// What was answered is known now; what stays pending was skipped.
	for i := range w.pendingSig {
		w.pendingSig[i] = w.pendingSig[i] && !w.neededSig[i]
	}
	for i := range w.pendingCtx {
		w.pendingCtx[i] = w.pendingCtx[i] && !w.neededCtx[i]
	}
	if err := ctx.Err(); err != nil {
		return tokens.Load(), err
	}
	return tokens.Load(), nil
}

// askBundle scores one bundle: a failure, a wrong count or a score outside
// [0, 1] leaves its signals at -1, which fails the sections that need them.
func askBundle(ctx context.Context, opts EvalOptions, c Content, chunk []pending) int64 {
	batch := SignalBatch{Content: c, GlobalContext: opts.GlobalContext, Signals: make([]SignalRequest, len(chunk)),
		Account: opts.Account, BypassCache: opts.BypassCache}
	for i, w := range chunk {
		batch.Signals[i] = w.req
	}
	res, err := opts.Evaluator.EvaluateSignals(ctx, batch)
	if err == nil && len(res.Scores) != len(chunk) {
		err = errBatchSize
	}
	for i, w := range chunk {
		v := -1.0
		if err == nil {
			v = res.Scores[i]
		}
		if math.IsNaN(v) || v < 0 || v > 1 {
			v = -1
		}
		*w.target = v
		if len(res.Notes) == len(chunk) {
			*w.note = res.Notes[i]
		}
	}
	return res.Usage.InputTokens
}
