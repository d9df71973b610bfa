-- The W3C trace context (traceparent, tracestate) of the request or run
-- that wrote a webhook event, so that its delivery, perhaps by another
-- process and after retries, is a span of that trace. Empty when tracing
-- was off.

-- +goose Up
ALTER TABLE webhook_events ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_events ADD COLUMN trace_state TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_events DROP COLUMN trace_state;
ALTER TABLE webhook_events DROP COLUMN trace_parent;
