package grpcapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// method is what the interceptors know of one RPC; the account types are
// those of the REST twins in openapi.yaml (x-account-type).
type method struct {
	name        string
	accountType domain.AccountType // "" when both types may call it
}

var methods = map[string]method{
	pb.GatewayService_Evaluate_FullMethodName:  {"Evaluate", domain.AccountPolicyFirst},
	pb.GatewayService_CreateJob_FullMethodName: {"CreateJob", domain.AccountPolicyFirst},
	pb.GatewayService_GetJob_FullMethodName:    {"GetJob", ""},
	pb.GatewayService_ListJobs_FullMethodName:  {"ListJobs", ""},
}

// gateway holds the interceptors.
type gateway struct {
	deps    Deps
	log     *slog.Logger
	metrics *metrics
}

// call is one RPC in flight.
type call struct {
	method    method
	fullName  string
	requestID string
	start     time.Time
	account   *domain.Account
}

type accountKey struct{}

// accountFrom returns the authenticated account of a method's context.
func accountFrom(ctx context.Context) *domain.Account {
	a, _ := ctx.Value(accountKey{}).(*domain.Account)
	return a
}

func (g *gateway) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	c := g.begin(ctx, info.FullMethod)
	// A trailer, not a header: a status with headers of its own is no
	// longer trailers-only, and grpc-js then does not retry it.
	_ = grpc.SetTrailer(ctx, metadata.Pairs("x-request-id", c.requestID))
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, g.panicked(c, p)
		}
		err = g.end(ctx, c, err)
	}()
	actx, err := g.admit(ctx, c)
	if err == nil {
		err = refusal(req)
	}
	if err != nil {
		return nil, err
	}
	return handler(actx, req)
}

func (g *gateway) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx := ss.Context()
	c := g.begin(ctx, info.FullMethod)
	ss.SetTrailer(metadata.Pairs("x-request-id", c.requestID))
	defer func() {
		if p := recover(); p != nil {
			err = g.panicked(c, p)
		}
		err = g.end(ctx, c, err)
	}()
	actx, err := g.admit(ctx, c)
	if err != nil {
		return err
	}
	return handler(srv, &admittedStream{ServerStream: ss, ctx: actx})
}

// admittedStream is a stream past authentication: its context carries the
// account, and the request it reads passes the codec's checks.
type admittedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *admittedStream) Context() context.Context { return s.ctx }

func (s *admittedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return refusal(m)
}

func (g *gateway) begin(ctx context.Context, fullName string) *call {
	c := &call{fullName: fullName, start: time.Now(), method: methods[fullName]}
	if c.method.name == "" {
		c.method.name = "unknown"
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if ids := md.Get("x-request-id"); len(ids) > 0 && validRequestID(ids[0]) {
		c.requestID = ids[0]
	} else {
		c.requestID = newRequestID()
	}
	return c
}

// admit authenticates the bearer key, applies the account's rate limit and
// the method's account type, in that order, as REST does: a caller learns
// first who it is, then how fast, then what it may call.
func (g *gateway) admit(ctx context.Context, c *call) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var header string
	if vs := md.Get("authorization"); len(vs) > 0 {
		header = vs[0]
	}
	account, wait, err := access.Admit(ctx, g.deps.Keys, g.deps.Limiter, header, c.method.name, c.method.accountType)
	c.account = account
	if wait > 0 {
		var de *domain.Error
		if errors.As(err, &de) {
			return ctx, rateLimited{err: de, wait: wait}
		}
	}
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, accountKey{}, account), nil
}

// end turns err into the RPC's status (toStatus), then records the call: one
// metric sample and one log line, as REST does for every request.
func (g *gateway) end(ctx context.Context, c *call, err error) error {
	code := "OK"
	if err != nil {
		var rl rateLimited
		st, known := toStatus(err)
		if errors.As(err, &rl) {
			st = rateLimitStatus(ctx, rl)
		}
		if !known {
			g.log.Error("request failed", "request_id", c.requestID, "method", c.fullName, "error", err.Error())
		}
		code = st.Code().String()
		err = st.Err()
	}
	latency := time.Since(c.start)
	g.metrics.requests.WithLabelValues(c.method.name, code).Inc()
	g.metrics.latency.WithLabelValues(c.method.name).Observe(latency.Seconds())
	attrs := []slog.Attr{
		slog.String("request_id", c.requestID), slog.String("protocol", "grpc"),
		slog.String("method", c.fullName), slog.String("operation", c.method.name),
		slog.String("code", code), slog.Duration("latency", latency),
	}
	if c.account != nil {
		attrs = append(attrs, slog.String("account", c.account.ID))
	}
	g.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
	return err
}

func (g *gateway) panicked(c *call, p any) error {
	g.log.Error("panic", "request_id", c.requestID, "method", c.fullName, "error", fmt.Sprint(p), "stack", string(debug.Stack()))
	return fmt.Errorf("panic: %v", p)
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// validRequestID accepts a client's id only when it cannot forge log lines.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// newMetrics registers the gRPC twins of the REST request metrics; a
// registry that has them already (a second server in one process) shares
// them.
func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contenteval_grpc_requests_total", Help: "gRPC requests by method and status code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "contenteval_grpc_request_duration_seconds", Help: "gRPC request latency by method (streams: until the last message).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method"}),
	}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(m.requests); errors.As(err, &are) {
		m.requests = are.ExistingCollector.(*prometheus.CounterVec)
	}
	if err := reg.Register(m.latency); errors.As(err, &are) {
		m.latency = are.ExistingCollector.(*prometheus.HistogramVec)
	}
	return m
}
