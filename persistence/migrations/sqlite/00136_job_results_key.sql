-- PostgreSQL drops the (job_id, id) key of job_results here. SQLite keeps
-- its key on id: label_hits' foreign key refers to it, and changing a key
-- means rebuilding the table.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
