package main

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/contenteval/contenteval/grpcapi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/soheilhy/cmux"
	"google.golang.org/grpc"
)

// grpcSniffTimeout bounds how long a new connection may take to show what
// it speaks (an HTTP/1 request line, or HTTP/2 up to its first HEADERS), as
// REST's ReadHeaderTimeout bounds a request's headers.
const grpcSniffTimeout = 10 * time.Second

// sharedPort serves the Clavata gRPC service on the REST port (DESIGN §14).
// A connection whose first HTTP/2 request has content-type application/grpc
// goes to grpc-go's native transport, which alone can answer an error as a
// trailers-only response (the JS SDK's retry policy needs that); every
// other connection goes to the REST server unchanged.
type sharedPort struct {
	mux   cmux.CMux
	grpc  *grpc.Server
	httpL net.Listener
	grpcL net.Listener
}

// shareWithGRPC splits ln between REST and gRPC and returns the listener
// REST serves; with --grpc=false it is ln itself.
func (m *Main) shareWithGRPC(ln net.Listener, reg *prometheus.Registry) net.Listener {
	if m.Config.NoGRPC {
		return ln
	}
	mux := cmux.New(ln)
	mux.SetReadTimeout(grpcSniffTimeout)
	// The settings frame lets clients that wait for the server's (grpc-go)
	// send their first request to be matched.
	grpcL := mux.MatchWithWriters(cmux.HTTP2MatchHeaderFieldPrefixSendSettings("content-type", "application/grpc"))
	httpL := mux.Match(cmux.Any())
	m.port = &sharedPort{
		mux: mux, httpL: httpL, grpcL: grpcL,
		grpc: grpcapi.New(grpcapi.Config{MaxRecvBytes: int(min(m.Config.BodyLimit, 1<<30))}, grpcapi.Deps{
			Log: m.Log, Keys: m.Keys, Limiter: m.Limiter, Jobs: m.Jobs, Registry: reg,
		}),
	}
	return httpL
}

// serve starts the gRPC server and the connection matcher; each reports
// its end on errc.
func (p *sharedPort) serve(errc chan<- error) {
	if p == nil {
		return
	}
	go func() { errc <- p.grpc.Serve(p.grpcL) }()
	go func() {
		err := p.mux.Serve()
		if errors.Is(err, net.ErrClosed) {
			err = nil // closed by shutdown
		}
		errc <- err
	}()
}

// drain starts a graceful stop of the gRPC server (GOAWAY, running RPCs
// finish) and returns a function that waits for it until ctx ends, then
// cuts what is left.
func (p *sharedPort) drain(ctx context.Context) (wait func() bool) {
	if p == nil {
		return func() bool { return true }
	}
	done := make(chan struct{})
	go func() {
		p.grpc.GracefulStop()
		close(done)
	}()
	return func() bool {
		defer p.mux.Close()
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
