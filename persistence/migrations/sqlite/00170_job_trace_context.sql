-- The W3C trace context (traceparent, tracestate) of the request that
-- queued a job, so that the worker that claims it, perhaps in another
-- process and after a restart, runs it as a span of that trace. Empty when
-- tracing was off, and for jobs stored already finished, which no worker
-- claims.

-- +goose Up
ALTER TABLE jobs ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN trace_state TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE jobs DROP COLUMN trace_state;
ALTER TABLE jobs DROP COLUMN trace_parent;
