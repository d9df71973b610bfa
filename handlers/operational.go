package handlers

import (
	"context"
	"embed"
	"net/http"
	"time"

	contenteval "github.com/contenteval/contenteval"
	"github.com/contenteval/contenteval/console"
	"github.com/contenteval/contenteval/domain"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// docsAssets is the Redoc reference page; `make docs-assets` refreshes the
// bundle from the npm package, so nothing is fetched from a CDN at run time.
//
//go:embed docs/index.html docs/redoc.standalone.js
var docsAssets embed.FS

// registerOperational mounts the unauthenticated routes outside the
// validated API group.
func (s *Server) registerOperational(e *echo.Echo) {
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", func(c echo.Context) error {
		if s.deps.Ready != nil {
			ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
			defer cancel()
			if err := s.deps.Ready(ctx); err != nil {
				s.log.Warn("not ready", "error", err.Error())
				msg := "database is not reachable"
				if domain.ErrorCode(err) == domain.Unavailable {
					msg = domain.ErrorMessage(err) // which storage fault, say: disk full
				}
				return domain.Errorf(domain.Unavailable, "%s", msg)
			}
		}
		return c.String(http.StatusOK, "ready\n")
	})
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{})))
	e.GET("/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/yaml", contenteval.OpenAPIYAML)
	})
	index, _ := docsAssets.ReadFile("docs/index.html")
	bundle, _ := docsAssets.ReadFile("docs/redoc.standalone.js")
	e.GET("/docs", func(c echo.Context) error {
		docsHeaders(c)
		return c.HTMLBlob(http.StatusOK, index)
	})
	e.GET("/docs/redoc.standalone.js", func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=86400")
		return c.Blob(http.StatusOK, "application/javascript", bundle)
	})
	// The review console: static files that call the API above like any
	// client (console/README.md); they carry their own Content-Security-Policy.
	ui := echo.WrapHandler(console.Handler())
	e.Match([]string{http.MethodGet, http.MethodHead}, "/console", ui)
	e.Match([]string{http.MethodGet, http.MethodHead}, console.Prefix+"*", ui)
}

type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contenteval_http_requests_total", Help: "HTTP requests by API operation and status code.",
		}, []string{"operation", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "contenteval_http_request_duration_seconds", Help: "HTTP request latency by API operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
	}
	reg.MustRegister(m.requests, m.latency)
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// middleware records each request once its status is final: it sends errors
// through the funnel itself so the status it reads is the one written.
func (m *httpMetrics) middleware(s *Server) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			op := "unknown"
			if o := operationOf(c); o != nil {
				op = o.id
			} else if p := c.Path(); p == "/healthz" || p == "/readyz" || p == "/metrics" || p == "/openapi.yaml" || p == "/docs" {
				op = p[1:]
			} else if p == "/console" || p == console.Prefix+"*" {
				op = "console"
			}
			m.requests.WithLabelValues(op, httpCode(c.Response().Status)).Inc()
			m.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

func httpCode(status int) string {
	const digits = "0123456789"
	if status < 100 || status > 999 {
		return "0"
	}
	return string([]byte{digits[status/100], digits[status/10%10], digits[status%10]})
}
