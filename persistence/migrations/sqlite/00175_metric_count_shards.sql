-- Each version's count rows of a day and an hour are split over a few
-- shards, as on PostgreSQL (where concurrent writers of one version waited
-- on each other's row locks): the same statements on both. SQLite cannot
-- change a primary key in place, so the tables are rebuilt.

-- +goose Up
CREATE TABLE version_metric_counts_sharded (
    account_id      TEXT NOT NULL,
    version_id      TEXT NOT NULL,
    day             TIMESTAMP NOT NULL CHECK (typeof(day) = 'integer'),  -- unix microseconds of 00:00 UTC
    label           TEXT NOT NULL,
    shard           INTEGER NOT NULL DEFAULT 0,
    evaluations     BIGINT NOT NULL DEFAULT 0,
    positives       BIGINT NOT NULL DEFAULT 0,
    annotations     BIGINT NOT NULL DEFAULT 0,
    true_positives  BIGINT NOT NULL DEFAULT 0,
    false_positives BIGINT NOT NULL DEFAULT 0,
    true_negatives  BIGINT NOT NULL DEFAULT 0,
    false_negatives BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, version_id, day, label, shard)
);
INSERT INTO version_metric_counts_sharded (account_id, version_id, day, label, shard, evaluations, positives, annotations,
        true_positives, false_positives, true_negatives, false_negatives)
    SELECT account_id, version_id, day, label, 0, evaluations, positives, annotations,
        true_positives, false_positives, true_negatives, false_negatives FROM version_metric_counts;
DROP TABLE version_metric_counts;
ALTER TABLE version_metric_counts_sharded RENAME TO version_metric_counts;
CREATE INDEX version_metric_counts_day_idx ON version_metric_counts (day);
CREATE TABLE version_metric_hour_counts_sharded (
    account_id      TEXT NOT NULL,
    version_id      TEXT NOT NULL,
    hour            TIMESTAMP NOT NULL CHECK (typeof(hour) = 'integer'),  -- unix microseconds of the hour's start
    label           TEXT NOT NULL,
    shard           INTEGER NOT NULL DEFAULT 0,
    evaluations     BIGINT NOT NULL DEFAULT 0,
    positives       BIGINT NOT NULL DEFAULT 0,
    annotations     BIGINT NOT NULL DEFAULT 0,
    true_positives  BIGINT NOT NULL DEFAULT 0,
    false_positives BIGINT NOT NULL DEFAULT 0,
    true_negatives  BIGINT NOT NULL DEFAULT 0,
    false_negatives BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, version_id, hour, label, shard)
);
INSERT INTO version_metric_hour_counts_sharded (account_id, version_id, hour, label, shard, evaluations, positives, annotations,
        true_positives, false_positives, true_negatives, false_negatives)
    SELECT account_id, version_id, hour, label, 0, evaluations, positives, annotations,
        true_positives, false_positives, true_negatives, false_negatives FROM version_metric_hour_counts;
DROP TABLE version_metric_hour_counts;
ALTER TABLE version_metric_hour_counts_sharded RENAME TO version_metric_hour_counts;
CREATE INDEX version_metric_hour_counts_hour_idx ON version_metric_hour_counts (hour);

-- +goose Down
CREATE TABLE version_metric_counts_summed (
    account_id      TEXT NOT NULL,
    version_id      TEXT NOT NULL,
    day             TIMESTAMP NOT NULL CHECK (typeof(day) = 'integer'),  -- unix microseconds of 00:00 UTC
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
INSERT INTO version_metric_counts_summed SELECT account_id, version_id, day, label, SUM(evaluations), SUM(positives),
        SUM(annotations), SUM(true_positives), SUM(false_positives), SUM(true_negatives), SUM(false_negatives)
    FROM version_metric_counts GROUP BY account_id, version_id, day, label;
DROP TABLE version_metric_counts;
ALTER TABLE version_metric_counts_summed RENAME TO version_metric_counts;
CREATE INDEX version_metric_counts_day_idx ON version_metric_counts (day);
CREATE TABLE version_metric_hour_counts_summed (
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
INSERT INTO version_metric_hour_counts_summed SELECT account_id, version_id, hour, label, SUM(evaluations), SUM(positives),
        SUM(annotations), SUM(true_positives), SUM(false_positives), SUM(true_negatives), SUM(false_negatives)
    FROM version_metric_hour_counts GROUP BY account_id, version_id, hour, label;
DROP TABLE version_metric_hour_counts;
ALTER TABLE version_metric_hour_counts_summed RENAME TO version_metric_hour_counts;
CREATE INDEX version_metric_hour_counts_hour_idx ON version_metric_hour_counts (hour);
