package rules

import (
	"context"
	"fmt"
	"math"
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
}

// SignalScores answers a SignalBatch: one score per signal, in order, each in [0, 1] or
// -1 when the backend could not decide; Usage is the backend's own token count.
type SignalScores struct {
	Scores []float64
	Usage  TokenUsage
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
}

// askEvaluator sends the plan's model signals to the evaluator in bundles and stores the
// scores. It returns the input tokens the backend reported.
func (st *evalState) askEvaluator(ctx context.Context, c Content, opts EvalOptions) (int64, error) {
	var work []pending
	for i, s := range st.p.signals {
		if (s.kind == SignalConcept || s.kind == SignalQuestion) && s.direct {
			work = append(work, pending{req: SignalRequest{Kind: s.kind, Text: s.text, Source: s.source()}, target: &st.sig[i].score})
		}
	}
	for i, cp := range st.p.contexts {
		l, r := st.p.signals[cp.left], st.p.signals[cp.right]
		work = append(work, pending{req: SignalRequest{Kind: SignalContext, Text: l.source(), Operator: cp.op, Right: r.source(), Source: cp.src}, target: &st.ctx[i].score})
	}
	size := opts.Evaluator.BundleSize()
	if size <= 0 {
		size = 8
	}
	var tokens int64
	for start := 0; start < len(work); start += size {
		if err := ctx.Err(); err != nil {
			return tokens, err
		}
		chunk := work[start:min(start+size, len(work))]
		batch := SignalBatch{Content: c, GlobalContext: opts.GlobalContext, Signals: make([]SignalRequest, len(chunk))}
		for i, w := range chunk {
			batch.Signals[i] = w.req
		}
		res, err := opts.Evaluator.EvaluateSignals(ctx, batch)
		tokens += res.Usage.InputTokens
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
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return tokens, ctxErr
		}
	}
	return tokens, nil
}
