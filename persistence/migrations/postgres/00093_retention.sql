-- History retention (see docs/operations.md, "Retention").
--
-- accounts.retention_seconds: an account's own retention of its evaluation
-- history, 0 for the server default (--retention); only a shorter one
-- applies.
--
-- retention_sweeps: one row, the lease of the background sweep. The
-- replica whose UPDATE sets lease_owner runs the sweep; the others find
-- the lease held (or the next run not due) and do nothing, so one replica
-- sweeps at a time and a crashed sweeper's lease simply runs out.
--
-- shadow_results.job_id: the live job of the result, so that a job's
-- shadow rows can be found (and expired, or partitioned) by its id like
-- its results, hits and feedback.
--
-- webhook_events_done_idx: finished deliveries by age, for their expiry.

-- +goose Up
ALTER TABLE accounts ADD COLUMN retention_seconds BIGINT NOT NULL DEFAULT 0 CHECK (retention_seconds >= 0);

CREATE TABLE retention_sweeps (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until TIMESTAMPTZ,
    next_run    TIMESTAMPTZ
);
INSERT INTO retention_sweeps (id) VALUES (1);

ALTER TABLE shadow_results ADD COLUMN job_id TEXT NOT NULL DEFAULT '';
UPDATE shadow_results r SET job_id = e.job_id
FROM shadow_evaluations e
WHERE e.shadow_version_id = r.shadow_version_id AND e.job_result_id = r.job_result_id;

CREATE INDEX webhook_events_done_idx ON webhook_events (created)
    WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;

-- +goose Down
DROP INDEX webhook_events_done_idx;
ALTER TABLE shadow_results DROP COLUMN job_id;
DROP TABLE retention_sweeps;
ALTER TABLE accounts DROP COLUMN retention_seconds;
