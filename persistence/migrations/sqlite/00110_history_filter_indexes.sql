-- Indexes that serve the filters of the history lists, so that a page
-- costs the same however long the account's history is (docs/operations.md,
-- "Retention"). Without them a filter with few or no matches (jobs of a
-- status, of a policy; a shadow version's disagreements) walks every row of
-- the account newest first looking for a page that never fills.
--
-- jobs_account_status_created_idx: GET /v1/jobs?status=..., with or
-- without a time window; the page order (created, id descending) is the
-- index order. jobs_account_policy_created_idx likewise for the policy
-- filter; partial, as label-first jobs have no policy, and the query
-- repeats the predicate. shadow_results_disagreements_idx: the
-- disagreements of a shadow version in page order.
-- shadow_evaluations_version_created_idx: a shadow version's evaluations
-- in a time window, for its metrics and stats.

-- +goose Up
CREATE INDEX jobs_account_status_created_idx ON jobs (account_id, status, created, id);
CREATE INDEX jobs_account_policy_created_idx ON jobs (account_id, policy_id, created, id) WHERE policy_id <> '';
CREATE INDEX shadow_results_disagreements_idx ON shadow_results (shadow_version_id, job_result_id, label) WHERE disagrees;
CREATE INDEX shadow_evaluations_version_created_idx ON shadow_evaluations (shadow_version_id, job_created);

-- +goose Down
DROP INDEX shadow_evaluations_version_created_idx;
DROP INDEX shadow_results_disagreements_idx;
DROP INDEX jobs_account_policy_created_idx;
DROP INDEX jobs_account_status_created_idx;
