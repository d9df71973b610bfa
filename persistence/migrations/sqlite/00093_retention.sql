-- SQLite twin of the PostgreSQL migration (see there): an account's own
-- retention, the lease row of the background sweep, the live job of each
-- shadow result, and finished webhook deliveries by age.

-- +goose Up
ALTER TABLE accounts ADD COLUMN retention_seconds INTEGER NOT NULL DEFAULT 0 CHECK (retention_seconds >= 0);

CREATE TABLE retention_sweeps (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until TIMESTAMP CHECK (lease_until IS NULL OR typeof(lease_until) = 'integer'),
    next_run    TIMESTAMP CHECK (next_run IS NULL OR typeof(next_run) = 'integer')
);
INSERT INTO retention_sweeps (id) VALUES (1);

ALTER TABLE shadow_results ADD COLUMN job_id TEXT NOT NULL DEFAULT '';
UPDATE shadow_results SET job_id = COALESCE((
    SELECT e.job_id FROM shadow_evaluations e
    WHERE e.shadow_version_id = shadow_results.shadow_version_id AND e.job_result_id = shadow_results.job_result_id), '');
CREATE INDEX shadow_results_job_idx ON shadow_results (job_id);
-- Expiry removes a job's shadow rows by its id.
CREATE INDEX shadow_evaluations_job_idx ON shadow_evaluations (job_id);

CREATE INDEX webhook_events_done_idx ON webhook_events (created)
    WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;

-- +goose Down
DROP INDEX webhook_events_done_idx;
DROP INDEX shadow_evaluations_job_idx;
DROP INDEX shadow_results_job_idx;
ALTER TABLE shadow_results DROP COLUMN job_id;
DROP TABLE retention_sweeps;
ALTER TABLE accounts DROP COLUMN retention_seconds;
