package modelbackend

import (
	"context"
	"log/slog"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// BuiltinStack is the stack name that asks for the built-in evaluators
// even when a default backend is configured.
const BuiltinStack = domain.BuiltinStack

var _ domain.SignalBackends = (*Registry)(nil)

// Registry holds the backends of a backends file and implements
// domain.SignalBackends.
type Registry struct {
	backends map[string]*Backend
	def      string
}

// NewRegistry starts the backends of f (no network until the first call).
func NewRegistry(f *File, reg prometheus.Registerer, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.Default()
	}
	m := newMetrics(reg)
	r := &Registry{backends: map[string]*Backend{}, def: f.Default}
	for _, s := range f.Backends {
		r.backends[s.Name] = newBackend(s, m, log)
	}
	return r
}

// KnownStack reports whether name can be used as a stack: "" (the
// default), "builtin", or a backend of the file.
func (r *Registry) KnownStack(name string) bool {
	if name == "" || name == BuiltinStack {
		return true
	}
	_, ok := r.backends[name]
	return ok
}

// Stacks lists the backend names, sorted.
func (r *Registry) Stacks() []string {
	out := make([]string, 0, len(r.backends))
	for n := range r.backends {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Backend returns the backend named name.
func (r *Registry) Backend(name string) (*Backend, bool) {
	b, ok := r.backends[name]
	return b, ok
}

// Evaluator returns the evaluator of stack ("" is the file's default), the
// backend's expeditedBackend for expedited evaluations, or nil for the
// built-in evaluators. A name no longer in the file (a version stored
// before the file changed) fails its signals rather than silently using
// another model.
func (r *Registry) Evaluator(stack string, expedited bool) rules.SignalEvaluator {
	if stack == "" {
		stack = r.def
	}
	if stack == "" || stack == BuiltinStack {
		return nil
	}
	b, ok := r.backends[stack]
	if !ok {
		return missingBackend(stack)
	}
	if expedited && b.spec.ExpeditedBackend != "" {
		if e, ok := r.backends[b.spec.ExpeditedBackend]; ok {
			return e
		}
	}
	return b
}

// missingBackend fails every signal of a stack that is not configured.
type missingBackend string

func (m missingBackend) BundleSize() int { return 64 }

func (m missingBackend) EvaluateSignals(_ context.Context, b rules.SignalBatch) (rules.SignalScores, error) {
	out := rules.SignalScores{Scores: make([]float64, len(b.Signals)), Notes: make([]string, len(b.Signals))}
	for i := range out.Scores {
		out.Scores[i], out.Notes[i] = -1, "model backend "+string(m)+" is not configured"
	}
	return out, nil
}
