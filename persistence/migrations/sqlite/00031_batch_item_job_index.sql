-- Runs of text items of a batch share a job; job_index is the item's entry
-- in its job (the seq of its job_results row).

-- +goose Up
ALTER TABLE batch_items ADD COLUMN job_index INTEGER NOT NULL DEFAULT 0 CHECK (job_index >= 0);

-- +goose Down
ALTER TABLE batch_items DROP COLUMN job_index;
