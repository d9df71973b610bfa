package main

import (
	"context"
	"net"

	"github.com/contenteval/contenteval/grpcapi"
	"github.com/contenteval/contenteval/portshare"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// sharedPort serves the Clavata gRPC service on the REST port (docs/api.md#grpc).
// A connection whose first HTTP/2 request has content-type application/grpc
// goes to grpc-go's native transport, which alone can answer an error as a
// trailers-only response (the JS SDK's retry policy needs that); every
// other connection goes to the REST server unchanged. The splitter also
// bounds the port's connections, with or without gRPC.
type sharedPort struct {
	split *portshare.Splitter
	grpc  *grpc.Server // nil with --grpc=false
}

// shareWithGRPC splits ln between REST and gRPC and returns the listener
// REST serves (every connection's with --grpc=false).
func (m *Main) shareWithGRPC(ln net.Listener, reg *prometheus.Registry) net.Listener {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "contenteval_connections_refused_total",
		Help: "Connections closed unserved: over --max-conns or --max-conns-per-client, silent past --conn-start-timeout, or malformed HTTP/2.",
	}, []string{"reason"})
	reg.MustRegister(refused)
	split := portshare.New(ln, portshare.Config{
		MaxConns: m.Config.MaxConns, MaxConnsPerClient: m.Config.MaxConnsPerClient,
		StartTimeout: m.Config.ConnStartTimeout, GRPC: !m.Config.NoGRPC,
		Refused: func(reason string) { refused.WithLabelValues(reason).Inc() },
	})
	m.port = &sharedPort{split: split}
	if !m.Config.NoGRPC {
		m.port.grpc = grpcapi.New(grpcapi.Config{
			MaxRecvBytes: int(min(m.Config.BodyLimit, 1<<30)),
			MaxReceiving: m.Config.GRPCMaxReceiving, ConnMaxReceiving: m.Config.GRPCConnMaxReceiving,
			StreamSendTimeout: m.Config.StreamWriteTimeout, Reserve: m.promise.reserveFunc(),
		}, grpcapi.Deps{Log: m.Log, Keys: m.Keys, Limiter: m.Limiter, Jobs: m.Jobs, Registry: reg})
	}
	return split.HTTP()
}

// serve starts the gRPC server and the splitter; each reports its end on
// errc.
func (p *sharedPort) serve(errc chan<- error) {
	if p.grpc != nil {
		go func() { errc <- p.grpc.Serve(p.split.GRPC()) }()
	}
	go func() { errc <- p.split.Serve() }()
}

// drain starts a graceful stop of the gRPC server (GOAWAY, running RPCs
// finish) and returns a function that waits for it until ctx ends, then
// cuts what is left.
func (p *sharedPort) drain(ctx context.Context) (wait func() bool) {
	if p.grpc == nil {
		return func() bool { _ = p.split.Close(); return true }
	}
	done := make(chan struct{})
	go func() {
		p.grpc.GracefulStop()
		close(done)
	}()
	return func() bool {
		defer p.split.Close()
		select {
		case <-done:
			return true
		case <-ctx.Done():
			p.grpc.Stop()
			<-done
			return false
		}
	}
}
