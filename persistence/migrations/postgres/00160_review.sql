-- Human review (docs/review.md). A queue holds routes (JSON: which
-- policy's or label's sections, score band and outcomes feed it); a job
-- result matching one of them becomes one review item of the queue, in the
-- transaction that records the result. An item is open, claimed (by a
-- claim token until claim_expires_at; an expired claim counts as open) or
-- decided. content is the item's content, sealed (AES-GCM under a key
-- derived from the server key), NULL once deleted at content_expires_at.
-- review_decisions is the audit of decisions: one row per label decided,
-- with what the machine said, which the stats count.

-- +goose Up
CREATE TABLE review_queues (
    id             TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    name           TEXT NOT NULL,
    description    TEXT NOT NULL DEFAULT '',
    routes         TEXT NOT NULL,
    priority       INTEGER NOT NULL DEFAULT 0,
    sla_minutes    INTEGER NOT NULL DEFAULT 0,
    webhook_url    TEXT NOT NULL DEFAULT '',
    retention_days INTEGER NOT NULL DEFAULT 30,
    created        TIMESTAMPTZ NOT NULL,
    updated        TIMESTAMPTZ NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE review_items (
    id                 TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id         TEXT NOT NULL REFERENCES accounts (id),
    queue_id           TEXT NOT NULL REFERENCES review_queues (id) ON DELETE CASCADE,
    queue_priority     INTEGER NOT NULL DEFAULT 0,
    job_id             TEXT NOT NULL,
    job_result_id      TEXT NOT NULL,
    machine            TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN ('open', 'claimed', 'decided')),
    sla_deadline       TIMESTAMPTZ,
    position           TIMESTAMPTZ NOT NULL,
    claim_token        TEXT NOT NULL DEFAULT '',
    claimed_by         TEXT NOT NULL DEFAULT '',
    claim_expires_at   TIMESTAMPTZ,
    decided_by         TEXT NOT NULL DEFAULT '',
    decided_key_id     TEXT NOT NULL DEFAULT '',
    decided_at         TIMESTAMPTZ,
    decision           TEXT NOT NULL DEFAULT '',
    content            BYTEA,
    content_expires_at TIMESTAMPTZ,
    created            TIMESTAMPTZ NOT NULL,
    UNIQUE (queue_id, job_result_id)
);
-- Claims: the next open item of an account by queue priority, deadline, position.
CREATE INDEX review_items_claim_idx ON review_items (account_id, state, queue_priority, sla_deadline, position);
CREATE INDEX review_items_queue_idx ON review_items (queue_id, state, created, id);
CREATE INDEX review_items_job_idx ON review_items (account_id, job_id);
CREATE INDEX review_items_content_idx ON review_items (content_expires_at);

CREATE TABLE review_decisions (
    review_item_id  TEXT NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
    account_id      TEXT NOT NULL,
    queue_id        TEXT NOT NULL,
    label           TEXT NOT NULL,
    machine_outcome TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    decided_by      TEXT NOT NULL,
    key_id          TEXT NOT NULL,
    decided_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (review_item_id, label)
);
CREATE INDEX review_decisions_queue_idx ON review_decisions (queue_id, decided_at);

-- +goose Down
DROP TABLE review_decisions;
DROP TABLE review_items;
DROP TABLE review_queues;
