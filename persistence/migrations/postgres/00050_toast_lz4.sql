-- A job's input and each result's report are JSON of several KiB, which
-- PostgreSQL compresses when it stores the row. lz4 (PostgreSQL 14 and later,
-- when built with it, as Debian's and the official images are) does that
-- several times faster than the default pglz, which the jobs load test
-- (bench/cmd/jobsload) showed as about a tenth of the database's CPU per
-- synchronous job. A server without lz4 keeps pglz; nothing else changes.
-- EXECUTE, so that older servers, which do not know the syntax, reach the
-- handler instead of failing to parse the block.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'ALTER TABLE jobs ALTER COLUMN input SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE job_results ALTER COLUMN report SET COMPRESSION lz4';
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'lz4 compression is not available (%); keeping pglz', SQLERRM;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'ALTER TABLE jobs ALTER COLUMN input SET COMPRESSION default';
    EXECUTE 'ALTER TABLE job_results ALTER COLUMN report SET COMPRESSION default';
EXCEPTION WHEN OTHERS THEN
    NULL;
END
$$;
-- +goose StatementEnd
