-- SQLite twin of the PostgreSQL migration: times are INTEGER unix
-- microseconds in TIMESTAMP columns (see 00001), booleans INTEGER 0/1.
-- Policies and their immutable versions (append-only), jobs (the durable work
-- queue that every replica claims from, and the job records), job results, the
-- label hits of each result and the per-account daily evaluation usage.

-- +goose Up
CREATE TABLE policies (
    id                TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    policy_key        TEXT NOT NULL CHECK (policy_key <> ''),
    active_version_id TEXT NOT NULL DEFAULT '',
    disabled          INTEGER NOT NULL DEFAULT 0,
    created           TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    updated           TIMESTAMP NOT NULL CHECK (typeof(updated) = 'integer'),
    UNIQUE (account_id, policy_key)
);
-- ListPolicies: newest first within an account.
CREATE INDEX policies_account_created_idx ON policies (account_id, created, id);

-- Versions are append-only: nothing updates or deletes them.
CREATE TABLE policy_versions (
    id                     TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    policy_id              TEXT NOT NULL REFERENCES policies (id),
    seq                    INTEGER NOT NULL CHECK (seq > 0),
    text                   TEXT NOT NULL,
    dsl_tokens             INTEGER NOT NULL DEFAULT 0,
    signal_tokens          INTEGER NOT NULL DEFAULT 0,
    signal_special_tokens  INTEGER NOT NULL DEFAULT 0,
    content_special_tokens INTEGER NOT NULL DEFAULT 0,
    complexity_score       REAL NOT NULL DEFAULT 0,
    created                TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    UNIQUE (policy_id, seq)
);

-- jobs is both the job record and the work queue. status follows the
-- lifecycle of domain.JobStatus; lease_owner/lease_expires_at are set while a
-- worker holds the job (status = 'running').
CREATE TABLE jobs (
    id                TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    job_type          TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'canceled')),
    policy_id         TEXT NOT NULL DEFAULT '',
    policy_key        TEXT NOT NULL DEFAULT '',
    policy_version_id TEXT NOT NULL DEFAULT '',
    label_id          TEXT NOT NULL DEFAULT '',
    label_version_id  TEXT NOT NULL DEFAULT '',
    threshold         REAL NOT NULL,
    expedited         INTEGER NOT NULL DEFAULT 0,
    options           TEXT NOT NULL DEFAULT '{}',  -- JSON string map
    input             TEXT NOT NULL DEFAULT '[]',  -- JSON: the content to evaluate
    contents          TEXT NOT NULL DEFAULT '[]',  -- JSON: content hashes and metadata
    webhook_url       TEXT NOT NULL DEFAULT '',
    webhook_headers   TEXT NOT NULL DEFAULT '{}',  -- JSON string map
    error_reason      TEXT NOT NULL DEFAULT '',
    error_message     TEXT NOT NULL DEFAULT '',
    lease_owner       TEXT,
    lease_expires_at  TIMESTAMP CHECK (lease_expires_at IS NULL OR typeof(lease_expires_at) = 'integer'),
    attempts          INTEGER NOT NULL DEFAULT 0,
    quota_charged     INTEGER NOT NULL DEFAULT 0,
    created           TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    updated           TIMESTAMP NOT NULL CHECK (typeof(updated) = 'integer'),
    started           TIMESTAMP CHECK (started IS NULL OR typeof(started) = 'integer'),
    completed         TIMESTAMP CHECK (completed IS NULL OR typeof(completed) = 'integer')
);
-- ListJobs: newest first within an account (scanned backwards).
CREATE INDEX jobs_account_created_idx ON jobs (account_id, created, id);
-- The queue: only unfinished jobs, expedited lane first, then oldest.
CREATE INDEX jobs_queue_idx ON jobs (expedited DESC, created, id) WHERE status IN ('pending', 'running');

CREATE TABLE job_results (
    id            TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    job_id        TEXT NOT NULL REFERENCES jobs (id),
    seq           INTEGER NOT NULL CHECK (seq >= 0),  -- index of the contentData entry
    content_hash  TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',  -- JSON string map
    report        TEXT NOT NULL DEFAULT '',    -- JSON of the evaluation report
    error_reason  TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    created       TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    UNIQUE (job_id, seq)
);

-- label_hits: one row per occurrence of a TRUE label. seq orders the hits of
-- a job: results in the order they were recorded, and within a result the
-- hits in the order the evaluation recorded them. Bounds are milliseconds;
-- the frame and transcript bounds are for video only.
CREATE TABLE label_hits (
    job_id              TEXT NOT NULL REFERENCES jobs (id),
    job_result_id       TEXT NOT NULL REFERENCES job_results (id),
    seq                 INTEGER NOT NULL CHECK (seq >= 0),
    label               TEXT NOT NULL,
    modality            TEXT NOT NULL,
    score               REAL NOT NULL,
    start_ms            INTEGER NOT NULL,
    end_ms              INTEGER,
    frame_start_ms      INTEGER,
    frame_end_ms        INTEGER,
    transcript_start_ms INTEGER,
    transcript_end_ms   INTEGER,
    PRIMARY KEY (job_id, seq)
);
CREATE INDEX label_hits_result_idx ON label_hits (job_result_id, seq);

-- evaluation_usage counts the content items evaluated per account and UTC day,
-- for Account.Limits.EvaluationsPerDay.
CREATE TABLE evaluation_usage (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    day        TEXT NOT NULL,  -- YYYY-MM-DD, UTC
    used       INTEGER NOT NULL,
    PRIMARY KEY (account_id, day)
);

-- +goose Down
DROP TABLE evaluation_usage;
DROP TABLE label_hits;
DROP TABLE job_results;
DROP TABLE jobs;
DROP TABLE policy_versions;
DROP TABLE policies;
