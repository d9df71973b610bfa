package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A --role worker process serves no API, but an orchestrator still needs to
// know that it is alive and ready, and its metrics must be scraped: it
// listens on --health-addr for /healthz, /readyz and /metrics only
// (docs/operations.md#configuration).

// registerWorkerMetrics exports the queue workers' and webhook deliverer's
// counters on the process registry (every role: role all runs workers too).
func (m *Main) registerWorkerMetrics() {
	jobs, hooks := m.Jobs.WorkerStats(), &m.Webhooks.Stats
	counter := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v()) })
	}
	webhookHelp := "Webhook delivery attempts this process made, by outcome (delivered, retrying, abandoned)."
	m.Registry.MustRegister(
		counter("contenteval_worker_jobs_claimed_total", "Queued jobs this process's workers claimed.", jobs.Claimed.Load),
		counter("contenteval_worker_jobs_finished_total", "Claimed jobs whose run this process's workers finished (completed, failed or handed back).", jobs.Finished.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "contenteval_worker_claim_loop_last_pass_timestamp_seconds",
			Help: "When this process's job claim loop last went round; 0 when it does not run (role api)."},
			func() float64 {
				if t := jobs.LastPass(); !t.IsZero() {
					return float64(t.UnixNano()) / 1e9
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "contenteval_webhook_deliveries_total", Help: webhookHelp,
			ConstLabels: prometheus.Labels{"outcome": "delivered"}}, func() float64 { return float64(hooks.Delivered.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "contenteval_webhook_deliveries_total", Help: webhookHelp,
			ConstLabels: prometheus.Labels{"outcome": "retrying"}}, func() float64 { return float64(hooks.Retrying.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "contenteval_webhook_deliveries_total", Help: webhookHelp,
			ConstLabels: prometheus.Labels{"outcome": "abandoned"}}, func() float64 { return float64(hooks.Abandoned.Load()) }),
	)
}

// ListenHealth binds --health-addr for a worker (none when it is empty).
func (m *Main) ListenHealth() error {
	if m.Config.HealthAddr == "" {
		return nil
	}
	// The API listener registers these; a worker has none.
	_ = m.Registry.Register(collectors.NewGoCollector())
	_ = m.Registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", m.Config.HealthAddr)
	if err != nil {
		return fmt.Errorf("--health-addr: %w", err)
	}
	m.healthListener = ln
	m.healthServer = &http.Server{Handler: m.healthHandler(m.Clock.Now()), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	return nil
}

// HealthAddr is the address the worker's health listener is bound to.
func (m *Main) HealthAddr() string { return m.healthListener.Addr().String() }

// healthHandler serves the three operational routes; everything else is
// 404, so the API cannot be reached through a worker.
func (m *Main) healthHandler(started time.Time) http.Handler {
	mux := http.NewServeMux()
	stats, limit := m.Jobs.WorkerStats(), m.Jobs.StallLimit()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		// Before the first round the loop is measured from the listener's
		// start: a loop that never starts is stuck too.
		last := stats.LastPass()
		if last.IsZero() {
			last = started
		}
		if idle := m.Clock.Now().Sub(last); idle > limit {
			m.Log.Warn("worker is stuck", "claim_loop_idle", idle.String(), "limit", limit.String())
			http.Error(w, fmt.Sprintf("the job claim loop has not gone round for %s (limit %s)", idle.Round(time.Second), limit), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := m.DB.Ready(ctx); err != nil {
			m.Log.Warn("not ready", "error", err.Error())
			msg := "database is not reachable"
			if domain.ErrorCode(err) == domain.Unavailable {
				msg = domain.ErrorMessage(err) // which storage fault, say: disk full
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	return mux
}
