-- Immutable label versions (the API's LabelVersion). Append-only: the stores
-- have no UPDATE or DELETE for this table. (label_id, seq) is unique as a
-- second guard behind labels.last_version_seq.

-- +goose Up
CREATE TABLE label_versions (
    id                     TEXT PRIMARY KEY CHECK (id <> ''),
    label_id               TEXT NOT NULL REFERENCES labels (id),
    account_id             TEXT NOT NULL REFERENCES accounts (id),
    seq                    BIGINT NOT NULL CHECK (seq > 0),
    text                   TEXT NOT NULL,
    blob                   BYTEA,
    description            TEXT NOT NULL DEFAULT '',
    global_context         TEXT NOT NULL DEFAULT '',
    parent_id              TEXT NOT NULL DEFAULT '',
    created_by_id          TEXT NOT NULL DEFAULT '',
    -- LabelEvalOptions as JSON; '{}' when none were given.
    eval_options           TEXT NOT NULL DEFAULT '{}',
    signal_count           INTEGER NOT NULL DEFAULT 0,
    total_signal_tokens    INTEGER NOT NULL DEFAULT 0,
    complexity_score       DOUBLE PRECISION NOT NULL DEFAULT 0,
    dsl_tokens             INTEGER NOT NULL DEFAULT 0,
    global_context_tokens  INTEGER NOT NULL DEFAULT 0,
    signal_tokens          INTEGER NOT NULL DEFAULT 0,
    signal_special_tokens  INTEGER NOT NULL DEFAULT 0,
    content_special_tokens INTEGER NOT NULL DEFAULT 0,
    -- Kept for the SPEC field; no operation sets it.
    expunged               BOOLEAN NOT NULL DEFAULT FALSE,
    created                TIMESTAMPTZ NOT NULL,
    UNIQUE (label_id, seq)
);

-- +goose Down
DROP TABLE label_versions;
