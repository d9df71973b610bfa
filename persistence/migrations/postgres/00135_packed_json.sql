-- A job's input and a result's report are stored packed: DEFLATE-compressed
-- JSON (persistence/packed.go) in a binary column, as PostgreSQL leaves the
-- rows of a synchronous job, under its TOAST threshold, uncompressed. Rows
-- written before keep their JSON text in input and report, which the stores
-- still read; new rows leave those empty. The new columns are NULL for old
-- rows, so adding them rewrites nothing. They are stored EXTERNAL: a packed
-- value does not compress again, so PostgreSQL need not try.

-- +goose Up
ALTER TABLE jobs ADD COLUMN input_packed BYTEA;
ALTER TABLE jobs ALTER COLUMN input_packed SET STORAGE EXTERNAL;
ALTER TABLE job_results ADD COLUMN report_packed BYTEA;
ALTER TABLE job_results ALTER COLUMN report_packed SET STORAGE EXTERNAL;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM jobs WHERE input_packed IS NOT NULL)
        OR EXISTS (SELECT 1 FROM job_results WHERE report_packed IS NOT NULL) THEN
        RAISE EXCEPTION 'migration 00135 (packed JSON) cannot be undone once packed rows exist: restore a backup taken before it';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE job_results DROP COLUMN report_packed;
ALTER TABLE jobs DROP COLUMN input_packed;
