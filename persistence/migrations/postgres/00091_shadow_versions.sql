-- Shadow versions of policies (docs/api.md#extension-endpoints). A policy names at most one
-- shadow version ('' for none), evaluated on a sample of its live jobs
-- from the queue after their result is recorded. shadow_evaluations holds
-- one row per live job result a shadow version evaluated; shadow_results
-- the labels of it where either version's outcome was TRUE or FAILED
-- (every disagreement among them): a label of the shadow version not
-- listed was FALSE for both, so a result matching nothing costs one row.
-- Nothing of a shadow evaluation touches the live job, its results, hits
-- or webhooks.

-- +goose Up
ALTER TABLE policies ADD COLUMN shadow_version_id TEXT NOT NULL DEFAULT '';
ALTER TABLE policies ADD COLUMN shadow_sample_rate DOUBLE PRECISION NOT NULL DEFAULT 1;

CREATE TABLE shadow_evaluations (
    shadow_version_id TEXT NOT NULL,
    job_result_id     TEXT NOT NULL,
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    policy_id         TEXT NOT NULL,
    active_version_id TEXT NOT NULL,
    job_id            TEXT NOT NULL REFERENCES jobs (id),
    job_created       TIMESTAMPTZ NOT NULL,  -- the live job's, for since/until
    content_hash      TEXT NOT NULL DEFAULT '',
    disagrees         BOOLEAN NOT NULL,
    created           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (shadow_version_id, job_result_id)
);

CREATE TABLE shadow_results (
    shadow_version_id TEXT NOT NULL,
    job_result_id     TEXT NOT NULL,
    label             TEXT NOT NULL,
    active_outcome    TEXT NOT NULL,
    shadow_outcome    TEXT NOT NULL,
    disagrees         BOOLEAN NOT NULL,
    PRIMARY KEY (shadow_version_id, job_result_id, label),
    FOREIGN KEY (shadow_version_id, job_result_id) REFERENCES shadow_evaluations (shadow_version_id, job_result_id)
);

-- +goose Down
DROP TABLE shadow_results;
DROP TABLE shadow_evaluations;
ALTER TABLE policies DROP COLUMN shadow_sample_rate;
ALTER TABLE policies DROP COLUMN shadow_version_id;
