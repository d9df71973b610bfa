-- PostgreSQL keeps the lowest id of the job queue here, so that claims
-- prune the day partitions of jobs below it. SQLite's jobs table is not
-- partitioned: its queue index is one b-tree, and a claim has nothing to
-- prune.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
