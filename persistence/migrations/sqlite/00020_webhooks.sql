-- The webhook outbox (docs/api.md#webhooks): one row per notification owed to a customer
-- URL, written in the transaction of the state change it reports.

-- +goose Up
CREATE TABLE webhook_events (
    id              TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    url             TEXT NOT NULL,
    headers         TEXT NOT NULL DEFAULT '{}',
    type            TEXT NOT NULL,
    subject_kind    TEXT NOT NULL,
    subject_id      TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP CHECK (next_attempt_at IS NULL OR typeof(next_attempt_at) = 'integer'),
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     TIMESTAMP CHECK (lease_until IS NULL OR typeof(lease_until) = 'integer'),
    created         TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    delivered_at    TIMESTAMP CHECK (delivered_at IS NULL OR typeof(delivered_at) = 'integer'),
    failed_at       TIMESTAMP CHECK (failed_at IS NULL OR typeof(failed_at) = 'integer'),
    last_error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_events_due_idx ON webhook_events (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;

-- +goose Down
DROP TABLE webhook_events;
