package modelbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"github.com/contenteval/contenteval/domain/rules"
)

// Backend scores concept, question and context signals with one model
// server: it implements the rule engine's SignalEvaluator seam.
type Backend struct {
	spec    Spec
	prof    *profile
	caller  *caller
	cache   *expirable.LRU[string, reading] // nil when cacheTTL is 0
	flight  singleflight.Group
	metrics *metrics
	log     *slog.Logger
}

var _ rules.SignalEvaluator = (*Backend)(nil)

func newBackend(s Spec, m *metrics, log *slog.Logger) *Backend {
	b := &Backend{spec: s, prof: profiles[s.Profile], metrics: m, log: log}
	b.caller = newCaller(&b.spec)
	if s.CacheTTL.Duration > 0 {
		b.cache = expirable.NewLRU[string, reading](s.CacheEntries, nil, s.CacheTTL.Duration)
	}
	return b
}

// Name is the backend's name in the backends file.
func (b *Backend) Name() string { return b.spec.Name }

// BundleSize implements rules.SignalEvaluator: one signal per call for the
// profiles that judge a single criterion.
func (b *Backend) BundleSize() int {
	if b.prof.bundle {
		return b.spec.BundleSize
	}
	return 1
}

// callBudget bounds one (coalesced) call with its retries: it runs detached
// from the first caller, so that caller's leaving does not fail the others.
func (b *Backend) callBudget() time.Duration {
	return time.Duration(*b.spec.Retries+1)*b.spec.Timeout.Duration + time.Duration(*b.spec.Retries)*retryAfterCap + time.Second
}

type askResult struct {
	readings []reading
	usage    int64
}

// EvaluateSignals implements rules.SignalEvaluator. Cached answers are used
// as they are; the rest go in one call, made once however many evaluations
// ask the same thing at the same moment. A failed call scores its signals
// -1 (onFailure: fail) or hands them to the built-in evaluators
// (onFailure: builtin); either way the notes say so and the error is not
// returned, so cached answers in the same bundle still count.
func (b *Backend) EvaluateSignals(ctx context.Context, batch rules.SignalBatch) (rules.SignalScores, error) {
	n := len(batch.Signals)
	out := rules.SignalScores{Scores: make([]float64, n), Notes: make([]string, n)}
	text := contentText(batch.Content)
	withImage := b.spec.Vision && len(batch.Content.ImageBytes) > 0
	if text == "" && !withImage {
		// Nothing this model can read: the signal cannot be evaluated,
		// which is the content's doing, not the backend's.
		for i := range out.Scores {
			out.Scores[i], out.Notes[i] = -1, "model "+b.spec.Model+": no text it can read"
		}
		return out, nil
	}
	if err := b.checkPromptSize(batch, text); err != nil {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		b.metrics.errors.WithLabelValues(b.spec.Name, err.reason).Inc()
		return b.failed(ctx, out, batch, all, err)
	}
	keys := b.cacheKeys(batch, text, withImage)
	var miss []int
	for i, k := range keys {
		if batch.BypassCache {
			miss = append(miss, i)
			continue
		}
		// (a bypassed entry is not looked up: a lookup refreshes its place in
		// the LRU order)
		if r, ok := b.cacheGet(k); ok {
			out.Scores[i], out.Notes[i] = r.score, b.note(r)
			b.metrics.cacheHits.WithLabelValues(b.spec.Name).Inc()
			continue
		}
		miss = append(miss, i)
	}
	if len(miss) == 0 {
		return out, nil
	}
	sub := rules.SignalBatch{Content: batch.Content, GlobalContext: batch.GlobalContext, Signals: make([]rules.SignalRequest, len(miss))}
	flightKey := ""
	for j, i := range miss {
		sub.Signals[j] = batch.Signals[i]
		flightKey += keys[i]
	}
	leader := false
	ch := b.flight.DoChan(flightKey, func() (any, error) {
		leader = true
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.callBudget())
		defer cancel()
		return b.ask(cctx, batch.Account, sub)
	})
	var res singleflight.Result
	select {
	case <-ctx.Done():
		return out, ctx.Err()
	case res = <-ch:
	}
	if res.Err != nil {
		return b.failed(ctx, out, sub, miss, res.Err)
	}
	ar := res.Val.(*askResult)
	for j, i := range miss {
		r := ar.readings[j]
		out.Scores[i], out.Notes[i] = r.score, b.note(r)
		if b.cache != nil {
			b.cache.Add(keys[i], r)
		}
	}
	if leader {
		// Coalesced callers share one call: it is billed once.
		out.Usage.InputTokens = ar.usage
	}
	return out, nil
}

// ask makes one call for the signals and reads one score per signal.
func (b *Backend) ask(ctx context.Context, account string, batch rules.SignalBatch) (*askResult, error) {
	start := time.Now()
	a, err := b.caller.call(ctx, account, b.prof.endpoint, b.prof.request(&b.spec, batch))
	b.metrics.latency.WithLabelValues(b.spec.Name).Observe(time.Since(start).Seconds())
	var readings []reading
	if err == nil {
		b.metrics.tokens.WithLabelValues(b.spec.Name, "input").Add(float64(a.usage.input))
		b.metrics.tokens.WithLabelValues(b.spec.Name, "output").Add(float64(a.usage.output))
		readings, err = b.prof.read(a, len(batch.Signals))
		if err == nil && len(readings) != len(batch.Signals) {
			err = &malformedError{msg: "wrong number of verdicts"}
		}
		if err != nil {
			err = &callError{reason: "malformed", msg: err.Error()}
		}
	}
	if err != nil {
		b.metrics.calls.WithLabelValues(b.spec.Name, "error").Inc()
		b.metrics.errors.WithLabelValues(b.spec.Name, reasonOf(err)).Inc()
		return nil, err
	}
	for _, r := range readings {
		if r.score < 0 || r.score > 1 {
			return nil, &callError{reason: "malformed", msg: "a score outside [0, 1]"}
		}
	}
	b.metrics.calls.WithLabelValues(b.spec.Name, "ok").Inc()
	return &askResult{readings: readings, usage: a.usage.input}, nil
}

// failed ends the signals of a failed call as onFailure says, with one log
// line that names the backend and the reason and never the content.
func (b *Backend) failed(ctx context.Context, out rules.SignalScores, sub rules.SignalBatch, miss []int, err error) (rules.SignalScores, error) {
	reason := reasonOf(err)
	msg := err.Error()
	var ce *callError
	if !errors.As(err, &ce) && reason == "timeout" {
		msg = "no answer in time"
	}
	b.log.Warn("model backend call failed", "backend", b.spec.Name, "model", b.spec.Model,
		"reason", reason, "error", msg, "signals", len(miss), "on_failure", b.spec.OnFailure)
	if b.spec.OnFailure == OnFailureBuiltin {
		fb, ferr := rules.BuiltinEvaluator{}.EvaluateSignals(ctx, sub)
		for j, i := range miss {
			out.Scores[i], out.Notes[i] = -1, "builtin fallback: model "+b.spec.Model+" failed: "+msg
			if ferr == nil && j < len(fb.Scores) {
				out.Scores[i] = fb.Scores[j]
			}
		}
		return out, nil
	}
	for _, i := range miss {
		out.Scores[i], out.Notes[i] = -1, "model "+b.spec.Model+" failed: "+msg
	}
	return out, nil
}

// checkPromptSize refuses a call whose content, global context and
// criteria exceed the backend's maxPromptBytes: the longer the prompt the
// longer the call, and one account's long content must not time out the
// calls it shares the server with. Nothing is cut: a model shown only the
// start of the content would miss what follows, and padding would hide a
// violation from it.
func (b *Backend) checkPromptSize(batch rules.SignalBatch, text string) *callError {
	n := len(text) + len(batch.GlobalContext)
	for _, s := range batch.Signals {
		n += len(s.Text) + len(s.Right)
	}
	if n <= b.spec.MaxPromptBytes {
		return nil
	}
	return &callError{reason: "too_large", msg: fmt.Sprintf("content, context and criteria of %d bytes; this backend takes at most %d (maxPromptBytes)", n, b.spec.MaxPromptBytes)}
}

func (b *Backend) note(r reading) string {
	return "model " + b.spec.Model + ", " + r.how
}

func (b *Backend) cacheGet(k string) (reading, bool) {
	if b.cache == nil {
		return reading{}, false
	}
	return b.cache.Get(k)
}

// cacheKeys are per signal: the account (an answer is never served to, or
// timed by, another account), backend, model, profile and prompt version,
// the content (text, and the image when the model sees it), the signal and
// the global context.
func (b *Backend) cacheKeys(batch rules.SignalBatch, text string, withImage bool) []string {
	h := sha256.New()
	field := func(s string) {
		fmt.Fprintf(h, "%d:", len(s))
		h.Write([]byte(s))
	}
	field(batch.Account)
	field(b.spec.Name)
	field(b.spec.Model)
	field(b.prof.version)
	field(text)
	if withImage {
		field(batch.Content.ImageType)
		h.Write(batch.Content.ImageBytes)
	}
	field(batch.GlobalContext)
	base := h.Sum(nil)
	keys := make([]string, len(batch.Signals))
	for i, s := range batch.Signals {
		k := sha256.New()
		k.Write(base)
		fmt.Fprintf(k, "%s\x00%s", s.Kind, s.Source)
		keys[i] = hex.EncodeToString(k.Sum(nil))
	}
	return keys
}

func reasonOf(err error) string {
	var ce *callError
	if errors.As(err, &ce) {
		return ce.reason
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "other"
}
