-- SQLite twin of the PostgreSQL migration (times INTEGER unix microseconds,
-- booleans INTEGER 0/1). Dataset examples of labels and dataset runs
-- (docs/api.md#extension-endpoints).
--
-- dataset_examples: a label's test content with the outcome it should get.
-- Unversioned; never deleted with versions. kind is text or image (image
-- bytes, as stored after the precheck; image URLs are fetched on creation).
-- Ordered by id (time-ordered UUIDv7).
--
-- dataset_runs: one evaluation of a label version over the label's
-- examples. The examples are snapshotted into dataset_run_items when the
-- run is created and evaluated in chunks, each chunk a queued job of type
-- dataset_run (the durable, fairly shared queue of jobs). A chunk's
-- results are inserted in the transaction that finishes its job, guarded by
-- the job's lease, which also adds the chunk's counts to the run and
-- decrements chunks_left: each example is counted once whatever restarts.

-- +goose Up
CREATE TABLE dataset_examples (
    id               TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    label_id         TEXT NOT NULL REFERENCES labels (id),
    kind             TEXT NOT NULL CHECK (kind IN ('text', 'image')),
    text             TEXT NOT NULL DEFAULT '',
    bytes            BLOB,
    metadata         TEXT NOT NULL DEFAULT '{}',  -- JSON string map
    content_hash     TEXT NOT NULL,
    expected_outcome TEXT NOT NULL,
    note             TEXT NOT NULL DEFAULT '',
    created          TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer')
);
CREATE INDEX dataset_examples_label_idx ON dataset_examples (label_id, id);

CREATE TABLE dataset_runs (
    id               TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    label_id         TEXT NOT NULL REFERENCES labels (id),
    label_version_id TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'running', 'completed', 'failed')),
    threshold        REAL NOT NULL,
    example_count    INTEGER NOT NULL DEFAULT 0,
    chunks_left      INTEGER NOT NULL DEFAULT 0,
    true_positives   INTEGER NOT NULL DEFAULT 0,
    false_positives  INTEGER NOT NULL DEFAULT 0,
    true_negatives   INTEGER NOT NULL DEFAULT 0,
    false_negatives  INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    gave_up          INTEGER NOT NULL DEFAULT 0,  -- a chunk could not be evaluated: the run ends failed
    created          TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    updated          TIMESTAMP NOT NULL CHECK (typeof(updated) = 'integer'),
    completed        TIMESTAMP CHECK (completed IS NULL OR typeof(completed) = 'integer')
);
-- ListDatasetRuns: newest first within a label.
CREATE INDEX dataset_runs_label_created_idx ON dataset_runs (label_id, created, id);

CREATE TABLE dataset_run_items (
    run_id           TEXT NOT NULL REFERENCES dataset_runs (id),
    seq              INTEGER NOT NULL CHECK (seq >= 0),
    example_id       TEXT NOT NULL,
    expected_outcome TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE dataset_run_results (
    run_id           TEXT NOT NULL REFERENCES dataset_runs (id),
    seq              INTEGER NOT NULL CHECK (seq >= 0),
    example_id       TEXT NOT NULL,
    expected_outcome TEXT NOT NULL,
    outcome          TEXT NOT NULL,
    score            REAL NOT NULL,
    report           TEXT NOT NULL DEFAULT '',  -- JSON of the evaluation report
    error            TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, seq)
);
-- Compare: one run's result of an example.
CREATE INDEX dataset_run_results_example_idx ON dataset_run_results (run_id, example_id);

-- +goose Down
DROP TABLE dataset_run_results;
DROP TABLE dataset_run_items;
DROP TABLE dataset_runs;
DROP TABLE dataset_examples;
