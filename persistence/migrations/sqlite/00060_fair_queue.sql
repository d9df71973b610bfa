-- The queue is shared fairly across accounts (docs/operations.md#scaling): a claim finds the
-- accounts with claimable jobs by a loose scan of account_id, counts each
-- one's running jobs, and takes each account's own next jobs (expedited
-- first, then oldest). jobs_account_queue_idx serves the scan and the
-- per-account order; jobs_running_idx the counts, without reading the
-- pending backlog (it leaves out lease_expires_at, so that a lease renewal
-- changes no indexed column and stays a HOT update on PostgreSQL). The
-- global order of jobs_queue_idx is no longer used. Both indexes hold only
-- unfinished jobs, so they stay small however many jobs are finished.

-- +goose Up
CREATE INDEX jobs_account_queue_idx ON jobs (account_id, expedited DESC, created, id) WHERE status IN ('pending', 'running');
CREATE INDEX jobs_running_idx ON jobs (account_id) WHERE status = 'running';
DROP INDEX jobs_queue_idx;

-- +goose Down
CREATE INDEX jobs_queue_idx ON jobs (expedited DESC, created, id) WHERE status IN ('pending', 'running');
DROP INDEX jobs_running_idx;
DROP INDEX jobs_account_queue_idx;
