package modelbackend

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are per backend (docs/operations.md#model-backends): calls, latency, errors by reason,
// cache hits and tokens.
type metrics struct {
	calls     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	cacheHits *prometheus.CounterVec
	tokens    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contenteval_model_backend_calls_total", Help: "Calls made to model backends, by result (ok, error).",
		}, []string{"backend", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "contenteval_model_backend_call_seconds", Help: "Time of one model backend call, retries included.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"backend"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contenteval_model_backend_errors_total", Help: "Failed model backend calls, by reason.",
		}, []string{"backend", "reason"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contenteval_model_backend_cache_hits_total", Help: "Signals answered from the model backend cache.",
		}, []string{"backend"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contenteval_model_backend_tokens_total", Help: "Tokens the model backends reported, by kind (input, output).",
		}, []string{"backend", "kind"}),
	}
	if reg == nil {
		return m
	}
	m.calls = register(reg, m.calls)
	m.latency = register(reg, m.latency)
	m.errors = register(reg, m.errors)
	m.cacheHits = register(reg, m.cacheHits)
	m.tokens = register(reg, m.tokens)
	return m
}

// register registers c, or returns the collector already registered under
// its name (a registry shared by several servers in one process).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
