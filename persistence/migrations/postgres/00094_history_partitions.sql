-- The history tables are partitioned by day (docs/operations.md,
-- "Retention"), so that expiry drops a whole day instead of DELETE-scanning
-- it. Ids are UUIDv7 text, time first; the key columns become COLLATE "C"
-- so that text order is byte order and a day is one id range: from the
-- 13-character prefix ("xxxxxxxx-xxxx", the 48-bit millisecond time) of its
-- first millisecond to the next day's. jobs is partitioned by its id, the
-- tables hanging off a job (results, hits, feedback, shadow rows) by their
-- job_id with the same bounds, so a day's rows drop together; webhook
-- events by their own id ("msg_" and a UUIDv7). Every table has a default
-- partition for ids of other forms and days without a partition.
--
-- PostgreSQL requires the partition key in every unique index of a
-- partitioned table: jobs and webhook_events keep their id as primary key;
-- the child tables' keys gain job_id (it names one job, so uniqueness is
-- unchanged). Foreign keys to the partitioned tables are dropped: one
-- would make dropping a partition scan its referencing rows. The rows of a
-- job are written and expired together, by the same code on both dialects.
--
-- Existing rows are copied: each table is renamed, its partitioned
-- replacement is made with partitions for the days its rows span (at most
-- the last 31, and one "legacy" partition for everything older, which
-- expiry empties with batched DELETEs) and for today, the rows are
-- inserted, the old table dropped, and keys and indexes built after the
-- copy. The worker creates later days' partitions ahead of time, first
-- when it starts. The default partition stays small (ids of other forms):
-- PostgreSQL scans it, under a lock, for every partition created later.

-- +goose Up
ALTER TABLE shadow_results RENAME TO shadow_results_unpartitioned;
ALTER TABLE shadow_evaluations RENAME TO shadow_evaluations_unpartitioned;
ALTER TABLE label_hits RENAME TO label_hits_unpartitioned;
ALTER TABLE feedback_annotations RENAME TO feedback_annotations_unpartitioned;
ALTER TABLE job_results RENAME TO job_results_unpartitioned;
ALTER TABLE jobs RENAME TO jobs_unpartitioned;
ALTER TABLE webhook_events RENAME TO webhook_events_unpartitioned;

CREATE TABLE jobs (
    id                TEXT COLLATE "C" NOT NULL CHECK (id <> ''),
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    job_type          TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'canceled')),
    policy_id         TEXT NOT NULL DEFAULT '',
    policy_key        TEXT NOT NULL DEFAULT '',
    policy_version_id TEXT NOT NULL DEFAULT '',
    label_id          TEXT NOT NULL DEFAULT '',
    label_version_id  TEXT NOT NULL DEFAULT '',
    threshold         DOUBLE PRECISION NOT NULL,
    expedited         BOOLEAN NOT NULL DEFAULT FALSE,
    options           TEXT NOT NULL DEFAULT '{}',
    input             TEXT NOT NULL DEFAULT '[]',
    contents          TEXT NOT NULL DEFAULT '[]',
    webhook_url       TEXT NOT NULL DEFAULT '',
    webhook_headers   TEXT NOT NULL DEFAULT '{}',
    error_reason      TEXT NOT NULL DEFAULT '',
    error_message     TEXT NOT NULL DEFAULT '',
    lease_owner       TEXT,
    lease_expires_at  TIMESTAMPTZ,
    attempts          INTEGER NOT NULL DEFAULT 0,
    quota_charged     BOOLEAN NOT NULL DEFAULT FALSE,
    created           TIMESTAMPTZ NOT NULL,
    updated           TIMESTAMPTZ NOT NULL,
    started           TIMESTAMPTZ,
    completed         TIMESTAMPTZ
) PARTITION BY RANGE (id);

CREATE TABLE job_results (
    id            TEXT NOT NULL CHECK (id <> ''),
    job_id        TEXT COLLATE "C" NOT NULL,
    seq           INTEGER NOT NULL CHECK (seq >= 0),
    content_hash  TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',
    report        TEXT NOT NULL DEFAULT '',
    error_reason  TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    created       TIMESTAMPTZ NOT NULL
) PARTITION BY RANGE (job_id);

CREATE TABLE label_hits (
    job_id              TEXT COLLATE "C" NOT NULL,
    job_result_id       TEXT NOT NULL,
    seq                 INTEGER NOT NULL CHECK (seq >= 0),
    label               TEXT NOT NULL,
    modality            TEXT NOT NULL,
    score               DOUBLE PRECISION NOT NULL,
    start_ms            BIGINT NOT NULL,
    end_ms              BIGINT,
    frame_start_ms      BIGINT,
    frame_end_ms        BIGINT,
    transcript_start_ms BIGINT,
    transcript_end_ms   BIGINT,
    spans               TEXT NOT NULL DEFAULT ''
) PARTITION BY RANGE (job_id);

CREATE TABLE feedback_annotations (
    id               TEXT NOT NULL CHECK (id <> ''),
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    job_id           TEXT COLLATE "C" NOT NULL,
    job_result_id    TEXT NOT NULL,
    target_key       TEXT NOT NULL,
    content_hash     TEXT NOT NULL DEFAULT '',
    modality         TEXT NOT NULL DEFAULT '',
    start_ms         BIGINT,
    end_ms           BIGINT,
    label            TEXT NOT NULL,
    label_id         TEXT NOT NULL DEFAULT '',
    label_version_id TEXT NOT NULL DEFAULT '',
    expected_outcome TEXT NOT NULL,
    actual_outcome   TEXT NOT NULL,
    comment          TEXT NOT NULL DEFAULT '',
    created          TIMESTAMPTZ NOT NULL,
    updated          TIMESTAMPTZ NOT NULL
) PARTITION BY RANGE (job_id);

CREATE TABLE shadow_evaluations (
    shadow_version_id TEXT NOT NULL,
    job_result_id     TEXT NOT NULL,
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    policy_id         TEXT NOT NULL,
    active_version_id TEXT NOT NULL,
    job_id            TEXT COLLATE "C" NOT NULL,
    job_created       TIMESTAMPTZ NOT NULL,
    content_hash      TEXT NOT NULL DEFAULT '',
    disagrees         BOOLEAN NOT NULL,
    created           TIMESTAMPTZ NOT NULL
) PARTITION BY RANGE (job_id);

CREATE TABLE shadow_results (
    shadow_version_id TEXT NOT NULL,
    job_result_id     TEXT NOT NULL,
    label             TEXT NOT NULL,
    active_outcome    TEXT NOT NULL,
    shadow_outcome    TEXT NOT NULL,
    disagrees         BOOLEAN NOT NULL,
    job_id            TEXT COLLATE "C" NOT NULL DEFAULT ''
) PARTITION BY RANGE (job_id);

CREATE TABLE webhook_events (
    id              TEXT COLLATE "C" NOT NULL CHECK (id <> ''),
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    url             TEXT NOT NULL,
    headers         TEXT NOT NULL DEFAULT '{}',
    type            TEXT NOT NULL,
    subject_kind    TEXT NOT NULL,
    subject_id      TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ,
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     TIMESTAMPTZ,
    created         TIMESTAMPTZ NOT NULL,
    delivered_at    TIMESTAMPTZ,
    failed_at       TIMESTAMPTZ,
    last_error      TEXT NOT NULL DEFAULT ''
) PARTITION BY RANGE (id);

-- See 00050: lz4 where the server has it. Set before the partitions are
-- made, which take it from their parent.
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'ALTER TABLE jobs ALTER COLUMN input SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE job_results ALTER COLUMN report SET COMPRESSION lz4';
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'lz4 compression is not available (%); keeping pglz', SQLERRM;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    today     date := (now() AT TIME ZONE 'UTC')::date;
    first_day date;
    webhook_first date;
    oldest    date;
    d         date;
    t         text;
    pfx       text;
    lo        text;
    hi        text;
BEGIN
    -- The oldest UUIDv7 (version digit 7) of each keyed history.
    SELECT (to_timestamp(('x' || substr(min(id), 1, 8) || substr(min(id), 10, 4))::bit(48)::bigint / 1000.0) AT TIME ZONE 'UTC')::date
      INTO first_day FROM jobs_unpartitioned WHERE id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7';
    SELECT (to_timestamp(('x' || substr(min(id), 5, 8) || substr(min(id), 14, 4))::bit(48)::bigint / 1000.0) AT TIME ZONE 'UTC')::date
      INTO webhook_first FROM webhook_events_unpartitioned WHERE id ~ '^msg_[0-9a-f]{8}-[0-9a-f]{4}-7';
    oldest := LEAST(COALESCE(first_day, today), COALESCE(webhook_first, today), today);
    first_day := GREATEST(oldest, today - 31);
    FOREACH t IN ARRAY ARRAY['jobs', 'job_results', 'label_hits', 'feedback_annotations',
                             'shadow_evaluations', 'shadow_results', 'webhook_events'] LOOP
        pfx := CASE WHEN t = 'webhook_events' THEN 'msg_' ELSE '' END;
        EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t || '_pdefault', t);
        IF oldest < first_day THEN
            lo := lpad(to_hex((extract(epoch FROM first_day::timestamp) * 1000)::bigint), 12, '0');
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (MINVALUE) TO (%L)',
                t || '_plegacy', t, pfx || substr(lo, 1, 8) || '-' || substr(lo, 9, 4));
        END IF;
        d := first_day;
        WHILE d <= today LOOP
            lo := lpad(to_hex((extract(epoch FROM d::timestamp) * 1000)::bigint), 12, '0');
            hi := lpad(to_hex((extract(epoch FROM (d + 1)::timestamp) * 1000)::bigint), 12, '0');
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                t || '_p' || to_char(d, 'YYYYMMDD'), t,
                pfx || substr(lo, 1, 8) || '-' || substr(lo, 9, 4),
                pfx || substr(hi, 1, 8) || '-' || substr(hi, 9, 4));
            d := d + 1;
        END LOOP;
    END LOOP;
END
$$;
-- +goose StatementEnd

INSERT INTO jobs (id, account_id, job_type, status, policy_id, policy_key, policy_version_id, label_id,
        label_version_id, threshold, expedited, options, input, contents, webhook_url, webhook_headers,
        error_reason, error_message, lease_owner, lease_expires_at, attempts, quota_charged, created,
        updated, started, completed)
    SELECT id, account_id, job_type, status, policy_id, policy_key, policy_version_id, label_id,
        label_version_id, threshold, expedited, options, input, contents, webhook_url, webhook_headers,
        error_reason, error_message, lease_owner, lease_expires_at, attempts, quota_charged, created,
        updated, started, completed
    FROM jobs_unpartitioned;
INSERT INTO job_results (id, job_id, seq, content_hash, metadata, report, error_reason, error_message, created)
    SELECT id, job_id, seq, content_hash, metadata, report, error_reason, error_message, created
    FROM job_results_unpartitioned;
INSERT INTO label_hits (job_id, job_result_id, seq, label, modality, score, start_ms, end_ms, frame_start_ms,
        frame_end_ms, transcript_start_ms, transcript_end_ms, spans)
    SELECT job_id, job_result_id, seq, label, modality, score, start_ms, end_ms, frame_start_ms,
        frame_end_ms, transcript_start_ms, transcript_end_ms, spans
    FROM label_hits_unpartitioned;
INSERT INTO feedback_annotations (id, account_id, job_id, job_result_id, target_key, content_hash, modality,
        start_ms, end_ms, label, label_id, label_version_id, expected_outcome, actual_outcome, comment, created, updated)
    SELECT id, account_id, job_id, job_result_id, target_key, content_hash, modality,
        start_ms, end_ms, label, label_id, label_version_id, expected_outcome, actual_outcome, comment, created, updated
    FROM feedback_annotations_unpartitioned;
INSERT INTO shadow_evaluations (shadow_version_id, job_result_id, account_id, policy_id, active_version_id,
        job_id, job_created, content_hash, disagrees, created)
    SELECT shadow_version_id, job_result_id, account_id, policy_id, active_version_id,
        job_id, job_created, content_hash, disagrees, created
    FROM shadow_evaluations_unpartitioned;
INSERT INTO shadow_results (shadow_version_id, job_result_id, label, active_outcome, shadow_outcome, disagrees, job_id)
    SELECT shadow_version_id, job_result_id, label, active_outcome, shadow_outcome, disagrees, job_id
    FROM shadow_results_unpartitioned;
INSERT INTO webhook_events (id, account_id, url, headers, type, subject_kind, subject_id, attempts,
        next_attempt_at, lease_owner, lease_until, created, delivered_at, failed_at, last_error)
    SELECT id, account_id, url, headers, type, subject_kind, subject_id, attempts,
        next_attempt_at, lease_owner, lease_until, created, delivered_at, failed_at, last_error
    FROM webhook_events_unpartitioned;

DROP TABLE shadow_results_unpartitioned;
DROP TABLE shadow_evaluations_unpartitioned;
DROP TABLE label_hits_unpartitioned;
DROP TABLE feedback_annotations_unpartitioned;
DROP TABLE job_results_unpartitioned;
DROP TABLE jobs_unpartitioned;
DROP TABLE webhook_events_unpartitioned;

-- Keys and the indexes of 00002 to 00092, built once on the copied rows.
ALTER TABLE jobs ADD PRIMARY KEY (id);
CREATE INDEX jobs_account_created_idx ON jobs (account_id, created, id);
CREATE INDEX jobs_account_queue_idx ON jobs (account_id, expedited DESC, created, id) WHERE status IN ('pending', 'running');
CREATE INDEX jobs_running_idx ON jobs (account_id) WHERE status = 'running';
CREATE INDEX jobs_policy_version_created_idx ON jobs (account_id, policy_version_id, created) WHERE policy_version_id <> '';
CREATE INDEX jobs_label_version_created_idx ON jobs (account_id, label_version_id, created) WHERE label_version_id <> '';

ALTER TABLE job_results ADD PRIMARY KEY (job_id, id);
ALTER TABLE job_results ADD UNIQUE (job_id, seq);

ALTER TABLE label_hits ADD PRIMARY KEY (job_id, seq);
CREATE INDEX label_hits_result_idx ON label_hits (job_result_id, seq);

ALTER TABLE feedback_annotations ADD PRIMARY KEY (job_id, id);
ALTER TABLE feedback_annotations ADD UNIQUE (job_id, job_result_id, target_key, label);
CREATE INDEX feedback_annotations_job_created_idx ON feedback_annotations (job_id, created, id);

ALTER TABLE shadow_evaluations ADD PRIMARY KEY (shadow_version_id, job_result_id, job_id);
CREATE INDEX shadow_evaluations_job_idx ON shadow_evaluations (job_id);
ALTER TABLE shadow_results ADD PRIMARY KEY (shadow_version_id, job_result_id, label, job_id);
CREATE INDEX shadow_results_job_idx ON shadow_results (job_id);

ALTER TABLE webhook_events ADD PRIMARY KEY (id);
CREATE INDEX webhook_events_due_idx ON webhook_events (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX webhook_events_done_idx ON webhook_events (created)
    WHERE delivered_at IS NOT NULL OR failed_at IS NOT NULL;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'migration 00094 (history partitions) cannot be undone: restore a backup taken before it';
END
$$;
-- +goose StatementEnd
