package jobs

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/traces"
	"go.opentelemetry.io/otel/trace"
)

// startJobSpan starts a span for running j, with its ids and versions
// (never its content).
func startJobSpan(ctx context.Context, name string, j *domain.Job) (context.Context, trace.Span) {
	ctx, span := traces.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(traces.JobID(j.ID), traces.AccountID(j.AccountID), traces.PolicyID(j.PolicyID),
			traces.PolicyVersion(j.PolicyVersionID), traces.LabelVersion(j.LabelVersionID))
	}
	return ctx, span
}
