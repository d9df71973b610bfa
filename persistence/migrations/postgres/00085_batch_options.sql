-- A batch's evaluation options (options.options of POST /v1/batch-jobs:
-- the model backend stack, ocr, ...), given to the jobs of its items.

-- +goose Up
ALTER TABLE batch_jobs ADD COLUMN options TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE batch_jobs DROP COLUMN options;
