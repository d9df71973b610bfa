// Package tracing is OpenTelemetry tracing, off unless the standard
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER variable is set.
//
// Off costs nothing: the global tracer provider stays the no-op one, and
// the instrumentation of HTTP, gRPC and database/sql is not installed at
// all (every Wrap*/Open here hands back its argument untouched). Spans
// never carry content: ids and versions only.
package tracing

import (
	"context"
	"github.com/contenteval/contenteval/domain/traces"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ServiceName is the service.name of the spans unless OTEL_SERVICE_NAME
// says otherwise.
const ServiceName = "contenteval"

// Enabled reports whether Setup installed a tracer provider.
func Enabled() bool { return traces.Enabled() }

// Wanted reports whether the environment asks for traces.
func Wanted(getenv func(string) string) bool {
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_TRACES_EXPORTER") != ""
}

// Setup installs the global tracer provider and the W3C propagators when
// getenv asks for traces (exporter, endpoint, sampler and batching from
// the standard OTEL_* variables). The returned shutdown flushes the spans
// still batched and puts the no-op provider back; it is never nil.
func Setup(ctx context.Context, getenv func(string) string) (shutdown func(context.Context) error, err error) {
	if !Wanted(getenv) {
		return func(context.Context) error { return nil }, nil
	}
	exporter, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, err
	}
	res, err := sdkresource.Merge(sdkresource.Default(),
		sdkresource.NewSchemaless(attribute.String("service.name", ServiceName)))
	if err != nil {
		return nil, err
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default.
	env, err := sdkresource.New(ctx, sdkresource.WithFromEnv())
	if err != nil {
		return nil, err
	}
	if res, err = sdkresource.Merge(res, env); err != nil {
		return nil, err
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	traces.SetEnabled(true)
	return func(ctx context.Context) error {
		traces.SetEnabled(false)
		err := provider.Shutdown(ctx)
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		return err
	}, nil
}
