-- A job's input and a result's report are stored packed: DEFLATE-compressed
-- JSON (persistence/packed.go) in a BLOB, a fraction of the JSON text's
-- size (SQLite compresses nothing). Rows written before keep their JSON
-- text in input and report, which the stores still read; new rows leave
-- those empty. The new columns are NULL for old rows.

-- +goose Up
ALTER TABLE jobs ADD COLUMN input_packed BLOB;
ALTER TABLE job_results ADD COLUMN report_packed BLOB;

-- +goose Down
-- Dropping the columns drops the input and report of every row written
-- since: go back only from a database without such rows, or restore a
-- backup taken before.
ALTER TABLE job_results DROP COLUMN report_packed;
ALTER TABLE jobs DROP COLUMN input_packed;
