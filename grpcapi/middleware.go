package grpcapi

import (
	"context"
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
	"google.golang.org/protobuf/proto"
)

// method is what the interceptors know of one RPC; the account types and
// key roles are those of the REST twins (x-account-type in openapi.yaml,
// docs/api.md#key-roles).
type method struct {
	name        string
	accountType domain.AccountType // "" when both types may call it
	roles       access.RoleSet
}

// methods is the one place gRPC decides who may call a method. A method
// missing here admits no key (a test checks that every method of the
// service has an entry).
var methods = map[string]method{
	pb.GatewayService_Evaluate_FullMethodName:  {"Evaluate", domain.AccountPolicyFirst, access.EvaluateOrRead},
	pb.GatewayService_CreateJob_FullMethodName: {"CreateJob", domain.AccountPolicyFirst, access.EvaluateOrRead},
	pb.GatewayService_GetJob_FullMethodName:    {"GetJob", "", access.EvaluateOrRead},
	pb.GatewayService_ListJobs_FullMethodName:  {"ListJobs", "", access.EvaluateOrRead},
}

// gateway holds the interceptors.
type gateway struct {
	deps      Deps
	log       *slog.Logger
	metrics   *metrics
	receiving *receiveSlots
	reserve   func(bytes int64) (release func())
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
	as := &admittedStream{ServerStream: ss, ctx: actx, slots: g.receiving, reserve: g.reserve}
	defer as.releaseAll()
	return handler(srv, as)
}

// admittedStream is a stream past authentication: its context carries the
// account, it reads a request only with a receive slot, and the request
// passes the codec's checks. The requests it read are reserved (Config.
// Reserve) until its call ends.
type admittedStream struct {
	grpc.ServerStream
	ctx      context.Context
	slots    *receiveSlots
	reserve  func(bytes int64) (release func())
	releases []func()
}

func (s *admittedStream) releaseAll() {
	for _, r := range s.releases {
		r()
	}
}

func (s *admittedStream) Context() context.Context { return s.ctx }

func (s *admittedStream) RecvMsg(m any) error {
	if err := s.slots.receive(s.ctx, s.ServerStream, m); err != nil {
		return err
	}
	if pm, ok := m.(proto.Message); ok && s.reserve != nil {
		s.releases = append(s.releases, s.reserve(int64(proto.Size(pm))))
	}
	return refusal(m)
}

func (g *gateway) begin(ctx context.Context, fullName string) *call {
	c := &call{fullName: fullName, start: time.Now(), method: methods[fullName]}
	if c.method.name == "" {
		c.method.name = "unknown"
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var id string
	if ids := md.Get("x-request-id"); len(ids) > 0 {
		id = ids[0]
	}
	c.requestID = access.RequestID(id)
	return c
}

// admit authenticates the bearer key, applies the account's rate limit, the
// method's key roles and its account type, in that order, as REST does: a caller learns
// first who it is, then how fast, then what it may call.
func (g *gateway) admit(ctx context.Context, c *call) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var header string
	if vs := md.Get("authorization"); len(vs) > 0 {
		header = vs[0]
	}
	caller, wait, err := access.Admit(ctx, g.deps.Keys, g.deps.Limiter, header, c.method.name, c.method.roles, c.method.accountType)
	c.account = caller.Account
	if wait > 0 {
		var de *domain.Error
		if errors.As(err, &de) {
			return ctx, rateLimited{err: de, wait: wait}
		}
	}
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, accountKey{}, caller.Account), nil
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
