package grpcapi

import (
	"github.com/contenteval/contenteval/tracing"
	"log/slog"
	"time"

	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/domain/jobs"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Config holds the gRPC settings, already validated by cmd.
type Config struct {
	// MaxRecvBytes is the largest request message: the REST body limit, so
	// what REST accepts the SDKs may send (grpc-go's default is 4 MiB).
	MaxRecvBytes int
	// MaxReceiving and ConnMaxReceiving bound the request messages being
	// received at once, in the process and on one connection (default 8
	// and 2); each may be MaxRecvBytes, so receiving holds at most
	// MaxReceiving x MaxRecvBytes. More wait, their data held to 64 KiB.
	MaxReceiving, ConnMaxReceiving int
	// StreamSendTimeout is how long one message of Evaluate's stream may
	// wait for its client; 0 is 2 minutes.
	StreamSendTimeout time.Duration
	// Reserve, when set, is told of each request message as the process's
	// memory promise counts requests (8 x their bytes): while it is
	// received, as a request of an eighth of MaxRecvBytes (receiving holds
	// at most its bytes); once read, as a request of its size, until its
	// call ends (nil: none).
	Reserve func(bytes int64) (release func())
}

// Deps are the domain services the gRPC methods translate to: the ones
// handlers uses for the jobs REST twins.
type Deps struct {
	Log     *slog.Logger
	Keys    *access.KeyService
	Limiter *access.RateLimiter
	// Jobs submits, streams, gets and lists jobs.
	Jobs *jobs.Service
	// Registry receives the gRPC metrics (the REST /metrics registry);
	// nil makes a private one.
	Registry *prometheus.Registry
}

// Connection and stream bounds. The keepalive policy is what the SDKs need
// (as they behave on the wire): the JS SDK pings every 10 s, and grpc-go's default
// enforcement (one ping per 5 min) answers that with GOAWAY too_many_pings,
// after which grpc-js sends the call again.
const (
	minClientPing = 5 * time.Second
	// The server pings a connection quiet for serverPingAfter and drops it
	// when the ping is not answered in serverPingTimeout, so a vanished
	// client's stream ends (and its job is canceled) within minutes.
	serverPingAfter   = time.Minute
	serverPingTimeout = 20 * time.Second
	// An idle connection (no RPC) is closed with GOAWAY, as REST's
	// IdleTimeout closes idle keep-alive connections; clients reconnect.
	maxConnectionIdle = 5 * time.Minute
	// handshakeTimeout bounds the HTTP/2 preface and settings, as REST's
	// ReadHeaderTimeout bounds a request's headers.
	handshakeTimeout     = 10 * time.Second
	maxConcurrentStreams = 128
	maxHeaderListBytes   = 64 << 10
)

// service implements pb.GatewayServiceServer.
type service struct {
	pb.UnimplementedGatewayServiceServer
	deps Deps
	log  *slog.Logger
	// sendWindow is how long one message of a stream may wait for a
	// client that does not read.
	sendWindow time.Duration
}

// New builds the gRPC server with the GatewayService registered.
func New(cfg Config, deps Deps) *grpc.Server {
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	recvLimit := cfg.MaxRecvBytes
	if recvLimit <= 0 {
		recvLimit = 32 << 20
	}
	if cfg.MaxReceiving <= 0 {
		cfg.MaxReceiving = 8
	}
	if cfg.ConnMaxReceiving <= 0 {
		cfg.ConnMaxReceiving = 2
	}
	slots := newReceiveSlots(cfg.MaxReceiving, cfg.ConnMaxReceiving)
	slots.reserve, slots.limit = cfg.Reserve, int64(recvLimit)
	gw := &gateway{deps: deps, log: deps.Log, metrics: newMetrics(deps.Registry), receiving: slots, reserve: cfg.Reserve}
	srv := grpc.NewServer(append(tracing.GRPCServerOptions(),
		grpc.ForceServerCodecV2(newCodec()),
		grpc.MaxRecvMsgSize(recvLimit),
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.MaxHeaderListSize(maxHeaderListBytes),
		grpc.ConnectionTimeout(handshakeTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minClientPing, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: maxConnectionIdle, Time: serverPingAfter, Timeout: serverPingTimeout,
		}),
		grpc.StaticStreamWindowSize(streamWindow),
		grpc.StaticConnWindowSize(connWindow),
		grpc.InTapHandle(gw.tap),
		grpc.StatsHandler(connTagger{slots: slots}),
		grpc.ChainStreamInterceptor(gw.stream),
	)...)
	window := cfg.StreamSendTimeout
	if window <= 0 {
		window = defaultStreamSendWindow
	}
	// The unary methods are served as streams (asStreams), so that the
	// caller is admitted before its request is received.
	var _ pb.GatewayServiceServer = (*service)(nil)
	srv.RegisterService(asStreams(&pb.GatewayService_ServiceDesc), &service{deps: deps, log: deps.Log, sendWindow: window})
	return srv
}
