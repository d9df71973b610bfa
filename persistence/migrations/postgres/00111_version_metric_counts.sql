-- The live metrics of a version (GET .../versions/{id}/metrics) counted as
-- results are recorded, per account, version and UTC day of the job's
-- creation, so that reading them costs the days asked for, not a scan of
-- every job of the version with its results, hits and feedback (which took
-- seconds at a few million jobs). One row per label (positives and the
-- feedback on the label), and one with label '' for the version's
-- evaluations (job results). The rows are kept in step with the history in
-- the transactions that write it: a finished job adds its results and hits,
-- a feedback annotation its judgement (a replaced one takes the old back
-- out), expiry takes the expired jobs out, and dropping a day of history
-- drops that day's rows. Only completed client jobs count, as the metrics
-- always did. The rows of the jobs stored so far are counted here.

-- +goose Up
CREATE TABLE version_metric_counts (
    account_id      TEXT NOT NULL,
    version_id      TEXT NOT NULL,
    day             TIMESTAMPTZ NOT NULL,
    label           TEXT NOT NULL,
    evaluations     BIGINT NOT NULL DEFAULT 0,
    positives       BIGINT NOT NULL DEFAULT 0,
    annotations     BIGINT NOT NULL DEFAULT 0,
    true_positives  BIGINT NOT NULL DEFAULT 0,
    false_positives BIGINT NOT NULL DEFAULT 0,
    true_negatives  BIGINT NOT NULL DEFAULT 0,
    false_negatives BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, version_id, day, label)
);
-- Dropping a day of history drops its counts across accounts.
CREATE INDEX version_metric_counts_day_idx ON version_metric_counts (day);

INSERT INTO version_metric_counts (account_id, version_id, day, label, evaluations, positives, annotations,
        true_positives, false_positives, true_negatives, false_negatives)
WITH jv AS (
    SELECT id, account_id, policy_version_id AS version_id, date_trunc('day', created, 'UTC') AS day
    FROM jobs
    WHERE status = 'completed' AND job_type IN ('JOB_TYPE_STANDARD', 'JOB_TYPE_BATCH') AND policy_version_id <> ''
    UNION ALL
    SELECT id, account_id, label_version_id, date_trunc('day', created, 'UTC')
    FROM jobs
    WHERE status = 'completed' AND job_type IN ('JOB_TYPE_STANDARD', 'JOB_TYPE_BATCH') AND label_version_id <> ''
), c AS (
    SELECT jv.account_id, jv.version_id, jv.day, '' AS label, COUNT(*) AS evaluations, 0 AS positives,
        0 AS annotations, 0 AS tp, 0 AS fp, 0 AS tn, 0 AS fn
    FROM jv JOIN job_results r ON r.job_id = jv.id
    GROUP BY jv.account_id, jv.version_id, jv.day
    UNION ALL
    SELECT jv.account_id, jv.version_id, jv.day, h.label, 0, COUNT(DISTINCT h.job_result_id), 0, 0, 0, 0, 0
    FROM jv JOIN label_hits h ON h.job_id = jv.id
    GROUP BY jv.account_id, jv.version_id, jv.day, h.label
    UNION ALL
    SELECT jv.account_id, jv.version_id, jv.day, f.label, 0, 0, COUNT(*),
        COUNT(*) FILTER (WHERE f.expected_outcome = 'EVALUATION_RESULT_TRUE' AND f.actual_outcome IN ('EVALUATION_RESULT_TRUE', 'OUTCOME_TRUE')),
        COUNT(*) FILTER (WHERE f.expected_outcome = 'EVALUATION_RESULT_FALSE' AND f.actual_outcome IN ('EVALUATION_RESULT_TRUE', 'OUTCOME_TRUE')),
        COUNT(*) FILTER (WHERE f.expected_outcome = 'EVALUATION_RESULT_FALSE' AND f.actual_outcome IN ('EVALUATION_RESULT_FALSE', 'OUTCOME_FALSE')),
        COUNT(*) FILTER (WHERE f.expected_outcome = 'EVALUATION_RESULT_TRUE' AND f.actual_outcome IN ('EVALUATION_RESULT_FALSE', 'OUTCOME_FALSE'))
    FROM jv JOIN feedback_annotations f ON f.job_id = jv.id AND f.account_id = jv.account_id
    WHERE f.modality = '' AND f.expected_outcome IN ('EVALUATION_RESULT_TRUE', 'EVALUATION_RESULT_FALSE')
    GROUP BY jv.account_id, jv.version_id, jv.day, f.label
)
SELECT account_id, version_id, day, label, SUM(evaluations), SUM(positives), SUM(annotations),
    SUM(tp), SUM(fp), SUM(tn), SUM(fn)
FROM c GROUP BY account_id, version_id, day, label;

-- +goose Down
DROP TABLE version_metric_counts;
