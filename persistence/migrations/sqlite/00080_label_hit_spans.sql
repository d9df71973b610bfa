-- The flagged spans of a text label hit: JSON of the section's
-- spans in code points of the evaluated text, '' for none (every hit
-- before this migration, and hits of frames and hashes).

-- +goose Up
ALTER TABLE label_hits ADD COLUMN spans TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE label_hits DROP COLUMN spans;
