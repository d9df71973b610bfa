-- results_saved: the job, while running, stored results of its finished
-- items before it finished (SaveJobResults). Completing a job counts the
-- results it stored before as well as those it finishes with; only a job
-- that stored some (this flag, or a yield: yields > 0) has them read back,
-- so the common completion reads nothing more. Unfinished jobs that
-- already stored results when this migration runs are marked.

-- +goose Up
ALTER TABLE jobs ADD COLUMN results_saved BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE jobs SET results_saved = TRUE
WHERE status IN ('pending', 'running') AND EXISTS (SELECT 1 FROM job_results r WHERE r.job_id = jobs.id);

-- +goose Down
ALTER TABLE jobs DROP COLUMN results_saved;
