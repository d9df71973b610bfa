-- Live metrics of a version (GET .../versions/{id}/metrics) read the jobs
-- evaluated with one policy or label version in a time window; without
-- these they read every job of the account. Partial: a job carries one of
-- the two, so each insert maintains one of them, and the metrics queries
-- repeat the predicate so that both SQLite and PostgreSQL can use them.

-- +goose Up
CREATE INDEX jobs_policy_version_created_idx ON jobs (account_id, policy_version_id, created) WHERE policy_version_id <> '';
CREATE INDEX jobs_label_version_created_idx ON jobs (account_id, label_version_id, created) WHERE label_version_id <> '';

-- +goose Down
DROP INDEX jobs_policy_version_created_idx;
DROP INDEX jobs_label_version_created_idx;
