// Package traces starts the spans of our own (queue claims, evaluations,
// backend calls, tool runs, deliveries) and names their attributes:
// identifiers and versions, never content. Off (the default), nothing
// here builds a span.
package traces

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

const instrumentationName = "github.com/contenteval/contenteval"

// enabled is read on hot paths (every span start, every client built):
// an atomic keeps the check to one load.
var enabled atomic.Bool

// Enabled reports whether a tracer provider is installed (package tracing
// sets it up).
func Enabled() bool { return enabled.Load() }

// SetEnabled is for the one that installs or removes the provider.
func SetEnabled(on bool) { enabled.Store(on) }

// Start starts a span of our own (queue claims, evaluations, backend
// calls, tool runs, deliveries). Off, it hands back ctx and a no-op span
// without building anything, so the callers' attributes cost nothing
// beyond the call.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, noop.Span{}
	}
	return otel.Tracer(instrumentationName).Start(ctx, name, trace.WithAttributes(attrs...))
}

// Fail marks span failed when err is not nil. The message is left out:
// an error may quote what it failed on, and spans never hold content.
func Fail(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
}

// The attributes of our spans: identifiers and versions, never content.
var (
	JobID         = attribute.Key("contenteval.job.id").String
	AccountID     = attribute.Key("contenteval.account.id").String
	PolicyID      = attribute.Key("contenteval.policy.id").String
	PolicyVersion = attribute.Key("contenteval.policy.version").String
	LabelVersion  = attribute.Key("contenteval.label.version").String
	ItemIndex     = attribute.Key("contenteval.item.index").Int
	Backend       = attribute.Key("contenteval.backend.name").String
	Tool          = attribute.Key("contenteval.media.tool").String
	EventID       = attribute.Key("contenteval.webhook.event.id").String
)

// CarrySpan returns dst with the span of src as its parent span: for work
// that runs under a background context of its own (so that a client going
// away does not cut it short) but belongs to the request's trace.
func CarrySpan(dst, src context.Context) context.Context {
	if !enabled.Load() {
		return dst
	}
	return trace.ContextWithSpan(dst, trace.SpanFromContext(src))
}

// Claimed records a queue claim that began at began and took n rows. A
// claim that took nothing records no span: idle polls would bury the
// traces worth reading.
func Claimed(ctx context.Context, name string, began time.Time, n int) {
	if !enabled.Load() || n == 0 {
		return
	}
	_, span := otel.Tracer(instrumentationName).Start(ctx, name, trace.WithTimestamp(began),
		trace.WithAttributes(attribute.Int("contenteval.claimed", n)))
	span.End()
}

// Context returns the W3C trace context (traceparent and tracestate
// header values) of ctx's span, for work that resumes the trace later in
// another process (a webhook delivery from the outbox, an asynchronous
// job's run by a worker). Off, or with no span, both are empty. The
// tracestate is cut to MaxStoredState bytes (Stored).
func Context(ctx context.Context) (parent, state string) {
	if !enabled.Load() {
		return "", ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent"), cutState(carrier.Get("tracestate"))
}

// MaxStoredState bounds the tracestate stored with deferred work: the
// 512 bytes every W3C participant is asked to pass on. A tracestate
// comes in with a request (up to 32 members of 512 bytes each), so
// storing it whole would let a client put 16 KiB on every queued row.
const MaxStoredState = 512

// Stored returns parent and state as they may be stored with deferred
// work: parent a valid W3C traceparent, else both are empty; state the
// valid tracestate list, cut to MaxStoredState bytes (cutState), else
// empty. Values Context gave come back as they were (if not longer).
func Stored(parent, state string) (string, string) {
	if parent == "" {
		return "", ""
	}
	carrier := propagation.MapCarrier{"traceparent": parent}
	if state != "" {
		carrier["tracestate"] = state
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return "", ""
	}
	// Re-encoded, so that what is stored is exactly what Inject writes
	// (version 00, lower-case hex), whatever spelling came in.
	out := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithRemoteSpanContext(context.Background(), sc), out)
	return out.Get("traceparent"), cutState(out.Get("tracestate"))
}

// cutState bounds a tracestate list (comma-separated members) to
// MaxStoredState bytes as the W3C Trace Context recommendation says to
// truncate one: members longer than 128 bytes go first, then members from
// the end of the list.
func cutState(state string) string {
	if len(state) <= MaxStoredState {
		return state
	}
	members := strings.Split(state, ",")
	kept := members[:0]
	for _, m := range members {
		if len(m) <= 128 {
			kept = append(kept, m)
		}
	}
	for len(kept) > 0 && len(strings.Join(kept, ",")) > MaxStoredState {
		kept = kept[:len(kept)-1]
	}
	return strings.Join(kept, ",")
}

// Resume returns ctx with the span that parent and state (as Context gave
// them) name as its remote parent, so that the spans started under it are
// in that trace. Empty or malformed values leave ctx as it is.
func Resume(ctx context.Context, parent, state string) context.Context {
	if !enabled.Load() || parent == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": parent}
	if state != "" {
		carrier["tracestate"] = state
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}
