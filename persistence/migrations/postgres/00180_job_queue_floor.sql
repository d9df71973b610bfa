-- +goose Up
-- The lowest job id the queue can hold (persistence/job_queue_floor.go):
-- every pending or running job has an id at or above it, so a claim bounds
-- its reads of the queue by it and PostgreSQL prunes the day partitions
-- below it, which hold finished jobs only. One row; '' bounds nothing, and
-- the first claim raises it.
CREATE TABLE job_queue_floor (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    floor TEXT COLLATE "C" NOT NULL
);
INSERT INTO job_queue_floor (id, floor) VALUES (1, '');

-- +goose Down
DROP TABLE job_queue_floor;
