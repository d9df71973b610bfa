-- job_results had two unique indexes, (job_id, id) as its primary key and
-- (job_id, seq). Every read of results is by job (in seq order) or by job
-- and seq; none is by result id, which is a UUIDv7 made by the server and
-- unique by construction. The primary key's index is dropped: one index
-- entry less per result, in bytes and WAL (see
-- docs/operations.md#retention for the partitioning that required the
-- job_id in both). (job_id, seq) stays unique and serves every read.

-- +goose Up
ALTER TABLE job_results DROP CONSTRAINT job_results_pkey;

-- +goose Down
ALTER TABLE job_results ADD PRIMARY KEY (job_id, id);
