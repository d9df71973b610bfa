package grpcapi

import (
	"context"
	"slices"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/tap"
)

// Bounds on what a request holds before its handler reads it. A stream's
// data beyond its window is a flow-control error, so a stream not being
// read holds at most streamWindow; static windows keep grpc-go's bandwidth
// estimator from raising it (to 16 MiB). A message being received gets a
// window of its whole size from grpc-go, so the static windows cost no
// throughput to the one-message requests of this service. The connection
// window does not bound memory (grpc-go returns it on arrival): it is the
// estimator's ceiling, so a connection is as fast as before.
const (
	streamWindow = 64 << 10
	connWindow   = 16 << 20
)

// receiveSlots bounds the request messages being received at once: each
// may be as large as the receive limit, so N slots bound what receiving
// holds to N times it. A request waits for a slot of its connection, then
// one of the process, after authentication; while it waits its data stays
// within streamWindow.
type receiveSlots struct {
	process chan struct{}
	perConn int
	timeout time.Duration
	// reserve, when set, is told of each slot's message while it is
	// received (Config.Reserve): at most the receive limit's bytes, which
	// the promise counts as a request of an eighth of them.
	reserve func(bytes int64) (release func())
	limit   int64
}

func newReceiveSlots(process, perConn int) *receiveSlots {
	return &receiveSlots{process: make(chan struct{}, max(process, 1)), perConn: max(perConn, 1), timeout: receiveTimeout}
}

type connSlotsKey struct{}

// take waits for a slot of the connection of ctx and one of the process,
// and returns the function giving both back.
func (r *receiveSlots) take(ctx context.Context) (release func(), err error) {
	conn, _ := ctx.Value(connSlotsKey{}).(chan struct{})
	if conn != nil {
		select {
		case conn <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case r.process <- struct{}{}:
	case <-ctx.Done():
		if conn != nil {
			<-conn
		}
		return nil, ctx.Err()
	}
	return func() {
		<-r.process
		if conn != nil {
			<-conn
		}
	}, nil
}

// connTagger gives each connection its receive slots (grpc-go derives
// every stream's context from the connection's).
type connTagger struct{ slots *receiveSlots }

func (t connTagger) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connSlotsKey{}, make(chan struct{}, t.slots.perConn))
}

func (connTagger) HandleConn(context.Context, stats.ConnStats)                     {}
func (connTagger) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTagger) HandleRPC(context.Context, stats.RPCStats)                       {}

// tap refuses a call whose key is missing or not one this server signed,
// on its headers: grpc-go then answers and resets the stream before
// accepting a byte of its message. It runs on the connection's reading
// goroutine, so it checks only what needs no store (the interceptor does
// the rest, before the message is read). Its refusals carry no
// x-request-id trailer (grpc-go writes only the status), but are counted
// and logged as every call is.
func (g *gateway) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if _, known := methods[info.FullMethodName]; !known {
		return ctx, nil // grpc-go answers UNIMPLEMENTED without reading
	}
	var header string
	if vs := info.Header.Get("authorization"); len(vs) > 0 {
		header = vs[0]
	}
	err := access.CheckSignature(g.deps.Keys, header)
	if err == nil {
		return ctx, nil
	}
	mdCtx := metadata.NewIncomingContext(ctx, info.Header)
	return ctx, g.end(mdCtx, g.begin(mdCtx, info.FullMethodName), err)
}

// asStreams is desc with each unary method served as a stream of one
// request message. grpc-go receives a unary request whole before any
// interceptor runs; a stream's only when its handler reads, after the
// stream interceptor has admitted the caller and taken a receive slot. The
// wire is the same, and so is an error before the response
// (trailers-only). ServerStreams is set because grpc-go runs the stream
// interceptor only for streams; the handler still sends one message, and
// grpc-go still refuses a request of zero or two messages.
func asStreams(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	out := *desc
	out.Methods = nil
	out.Streams = slices.Clone(desc.Streams)
	for _, m := range desc.Methods {
		out.Streams = append(out.Streams, grpc.StreamDesc{StreamName: m.MethodName, Handler: unaryOverStream(m.Handler), ServerStreams: true})
	}
	return &out
}

func unaryOverStream(h grpc.MethodHandler) grpc.StreamHandler {
	return func(srv any, stream grpc.ServerStream) error {
		resp, err := h(srv, stream.Context(), stream.RecvMsg, nil)
		if err != nil {
			return err
		}
		return stream.SendMsg(resp)
	}
}

// receiveTimeout bounds how long one request holds a receive slot, as
// REST's ReadTimeout bounds a request: a client that sends slowly, or never
// ends its request, gives the slot back and its call fails.
const receiveTimeout = 2 * time.Minute

// receive reads one request message of ss once a receive slot is free.
func (r *receiveSlots) receive(ctx context.Context, ss grpc.ServerStream, m any) error {
	release, err := r.take(ctx)
	if err != nil {
		return err
	}
	defer release()
	if r.reserve != nil {
		defer r.reserve(r.limit / 8)()
	}
	// RecvMsg cannot be interrupted; returning ends the stream, which
	// ends the read.
	done := make(chan error, 1)
	go func() { done <- ss.RecvMsg(m) }()
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return domain.Errorf(domain.DeadlineExceeded, "the request message did not arrive within %s", r.timeout)
	}
}
