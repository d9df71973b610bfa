package tracing

import (
	"database/sql"
	"net/http"

	"github.com/XSAM/otelsql"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc"
)

// WrapTransport gives rt client spans and outgoing traceparent headers
// when tracing is on. It wraps rt, so what rt enforces (safehttp's dial
// guard) still applies to every request.
func WrapTransport(rt http.RoundTripper) http.RoundTripper {
	if !Enabled() {
		return rt
	}
	return otelhttp.NewTransport(rt)
}

// Echo adds the server span (reading an incoming traceparent) to e.
func Echo(e *echo.Echo) {
	if Enabled() {
		e.Use(otelecho.Middleware(ServiceName))
	}
}

// GRPCServerOptions are the gRPC server's span options: none when off.
func GRPCServerOptions() []grpc.ServerOption {
	if !Enabled() {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler())}
}

// OpenDB is sql.Open, with a span per statement when tracing is on. The
// statements' arguments are never recorded (they hold content); the SQL
// text is ours and is.
func OpenDB(driver, dsn, system string) (*sql.DB, error) {
	if !Enabled() {
		return sql.Open(driver, dsn)
	}
	return otelsql.Open(driver, dsn,
		otelsql.WithAttributes(attribute.String("db.system.name", system)),
		otelsql.WithSpanOptions(otelsql.SpanOptions{OmitConnResetSession: true, OmitConnPrepare: true, OmitRows: true}))
}
