-- The live metrics' counts per hour too, beside the counts per day of
-- migration 00111: a window that does not start and end at midnight UTC
-- (the console's "last 24 hours") read the part of a day at either end
-- from the jobs, up to a day's traffic of the version joined with its
-- results, hits and feedback. Now the whole days of a window are read from
-- the day counts (a few rows a day), the whole hours at either end from
-- these (a few rows an hour), and only what is left, less than an hour at
-- either end, from the jobs. Both are written in the same transactions and
-- the same way (an upsert adding to the row of the key); the history
-- stored so far is counted here.

-- +goose Up
CREATE TABLE version_metric_hour_counts (
    account_id      TEXT NOT NULL,
    version_id      TEXT NOT NULL,
    hour            TIMESTAMP NOT NULL CHECK (typeof(hour) = 'integer'),  -- unix microseconds of the hour's start
    label           TEXT NOT NULL,
    evaluations     BIGINT NOT NULL DEFAULT 0,
    positives       BIGINT NOT NULL DEFAULT 0,
    annotations     BIGINT NOT NULL DEFAULT 0,
    true_positives  BIGINT NOT NULL DEFAULT 0,
    false_positives BIGINT NOT NULL DEFAULT 0,
    true_negatives  BIGINT NOT NULL DEFAULT 0,
    false_negatives BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, version_id, hour, label)
);
-- Dropping a day of history drops its hours' counts across accounts.
CREATE INDEX version_metric_hour_counts_hour_idx ON version_metric_hour_counts (hour);

INSERT INTO version_metric_hour_counts (account_id, version_id, hour, label, evaluations, positives, annotations,
        true_positives, false_positives, true_negatives, false_negatives)
WITH jv AS (
    SELECT id, account_id, policy_version_id AS version_id, created - created % 3600000000 AS hour
    FROM jobs
    WHERE status = 'completed' AND job_type IN ('JOB_TYPE_STANDARD', 'JOB_TYPE_BATCH') AND policy_version_id <> ''
    UNION ALL
    SELECT id, account_id, label_version_id, created - created % 3600000000
    FROM jobs
    WHERE status = 'completed' AND job_type IN ('JOB_TYPE_STANDARD', 'JOB_TYPE_BATCH') AND label_version_id <> ''
), c AS (
    SELECT jv.account_id, jv.version_id, jv.hour, '' AS label, COUNT(*) AS evaluations, 0 AS positives,
        0 AS annotations, 0 AS tp, 0 AS fp, 0 AS tn, 0 AS fn
    FROM jv JOIN job_results r ON r.job_id = jv.id
    GROUP BY jv.account_id, jv.version_id, jv.hour
    UNION ALL
    SELECT jv.account_id, jv.version_id, jv.hour, h.label, 0, COUNT(DISTINCT h.job_result_id), 0, 0, 0, 0, 0
    FROM jv JOIN label_hits h ON h.job_id = jv.id
    GROUP BY jv.account_id, jv.version_id, jv.hour, h.label
    UNION ALL
    SELECT jv.account_id, jv.version_id, jv.hour, f.label, 0, 0, COUNT(*),
        SUM(CASE WHEN f.expected_outcome = 'EVALUATION_RESULT_TRUE' AND f.actual_outcome IN ('EVALUATION_RESULT_TRUE', 'OUTCOME_TRUE') THEN 1 ELSE 0 END),
        SUM(CASE WHEN f.expected_outcome = 'EVALUATION_RESULT_FALSE' AND f.actual_outcome IN ('EVALUATION_RESULT_TRUE', 'OUTCOME_TRUE') THEN 1 ELSE 0 END),
        SUM(CASE WHEN f.expected_outcome = 'EVALUATION_RESULT_FALSE' AND f.actual_outcome IN ('EVALUATION_RESULT_FALSE', 'OUTCOME_FALSE') THEN 1 ELSE 0 END),
        SUM(CASE WHEN f.expected_outcome = 'EVALUATION_RESULT_TRUE' AND f.actual_outcome IN ('EVALUATION_RESULT_FALSE', 'OUTCOME_FALSE') THEN 1 ELSE 0 END)
    FROM jv JOIN feedback_annotations f ON f.job_id = jv.id AND f.account_id = jv.account_id
    WHERE f.modality = '' AND f.expected_outcome IN ('EVALUATION_RESULT_TRUE', 'EVALUATION_RESULT_FALSE')
    GROUP BY jv.account_id, jv.version_id, jv.hour, f.label
)
SELECT account_id, version_id, hour, label, SUM(evaluations), SUM(positives), SUM(annotations),
    SUM(tp), SUM(fp), SUM(tn), SUM(fn)
FROM c GROUP BY account_id, version_id, hour, label;

-- +goose Down
DROP TABLE version_metric_hour_counts;
