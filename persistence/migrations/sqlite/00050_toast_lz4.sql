-- PostgreSQL only (its TOAST compression of jobs.input and job_results.report);
-- SQLite does not compress rows. Kept so both dialects have the same versions.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
