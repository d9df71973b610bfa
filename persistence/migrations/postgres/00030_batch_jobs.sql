-- Batch jobs (files in, files out) and their items. state follows the lifecycle of
-- domain.BatchState; lease_owner/lease_expires_at are set while a batch
-- worker drives the batch. Items keep input order (seq) and the id of the
-- JOB_TYPE_BATCH job that evaluates each; job_id has no foreign key because
-- the item row is written before its job (see domain.BatchItemPending).

-- +goose Up
CREATE TABLE batch_jobs (
    id                TEXT PRIMARY KEY CHECK (id <> ''),
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    name              TEXT NOT NULL DEFAULT '',
    policy_id         TEXT NOT NULL,
    policy_key        TEXT NOT NULL DEFAULT '',
    policy_version_id TEXT NOT NULL DEFAULT '',
    webhook_url       TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL CHECK (state IN ('initialized', 'queued', 'preprocessing', 'preprocessed',
                          'submitted', 'evaluating', 'postprocessing', 'postprocessed', 'completed', 'error', 'cancelled')),
    error_code        TEXT NOT NULL DEFAULT '',
    error_message     TEXT NOT NULL DEFAULT '',
    input_key         TEXT NOT NULL DEFAULT '',
    output_key        TEXT NOT NULL DEFAULT '',
    item_count        INTEGER NOT NULL DEFAULT 0,
    processed_count   INTEGER NOT NULL DEFAULT 0,
    failed_count      INTEGER NOT NULL DEFAULT 0,
    lease_owner       TEXT NOT NULL DEFAULT '',
    lease_expires_at  TIMESTAMPTZ,
    created           TIMESTAMPTZ NOT NULL,
    updated           TIMESTAMPTZ NOT NULL,
    completed         TIMESTAMPTZ
);
-- ListBatches: newest first within an account.
CREATE INDEX batch_jobs_account_created_idx ON batch_jobs (account_id, created, id);
-- The batch workers' queue: only batches a worker drives.
CREATE INDEX batch_jobs_work_idx ON batch_jobs (created, id)
    WHERE state NOT IN ('initialized', 'completed', 'error', 'cancelled');
-- Batches waiting for a direct (presigned) upload.
CREATE INDEX batch_jobs_initialized_idx ON batch_jobs (created, id) WHERE state = 'initialized';

CREATE TABLE batch_items (
    batch_id     TEXT NOT NULL REFERENCES batch_jobs (id),
    seq          INTEGER NOT NULL CHECK (seq >= 0),
    ref_id       TEXT NOT NULL CHECK (ref_id <> ''),
    job_id       TEXT NOT NULL CHECK (job_id <> ''),
    content_hash TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL CHECK (status IN ('pending', 'submitted')),
    PRIMARY KEY (batch_id, seq),
    UNIQUE (batch_id, ref_id)
);

-- +goose Down
DROP TABLE batch_items;
DROP TABLE batch_jobs;
