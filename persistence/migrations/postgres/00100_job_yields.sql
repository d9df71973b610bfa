-- A queued job may give its worker to another account between two of its
-- items and go back to the queue with the results of its first items
-- stored. yields counts those hand-overs: a job claimed with yields > 0
-- reads its stored results back and goes on from the next item, and a
-- job that never yielded (nearly all) costs its claim no such read.

-- +goose Up
ALTER TABLE jobs ADD COLUMN yields INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN yields;
