-- Feedback annotations on job results (an extension). One row per (job,
-- result, target, label), where target_key is the content hash, or the
-- content hash and the occurrence (modality, startMs, endMs) for timed
-- media. Replacing feedback updates the row in place, so its id and created
-- (the ordering) are kept.

-- +goose Up
CREATE TABLE feedback_annotations (
    id               TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    job_id           TEXT NOT NULL REFERENCES jobs (id),
    job_result_id    TEXT NOT NULL,
    target_key       TEXT NOT NULL,
    content_hash     TEXT NOT NULL DEFAULT '',
    modality         TEXT NOT NULL DEFAULT '',  -- '' when the target is the whole content
    start_ms         BIGINT,
    end_ms           BIGINT,
    label            TEXT NOT NULL,
    label_id         TEXT NOT NULL DEFAULT '',
    label_version_id TEXT NOT NULL DEFAULT '',
    expected_outcome TEXT NOT NULL,
    actual_outcome   TEXT NOT NULL,
    comment          TEXT NOT NULL DEFAULT '',
    created          TIMESTAMPTZ NOT NULL,
    updated          TIMESTAMPTZ NOT NULL,
    UNIQUE (job_id, job_result_id, target_key, label)
);
-- ListFeedback: oldest first within a job.
CREATE INDEX feedback_annotations_job_created_idx ON feedback_annotations (job_id, created, id);

-- +goose Down
DROP TABLE feedback_annotations;
