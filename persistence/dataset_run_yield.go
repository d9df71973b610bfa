package persistence

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// YieldDatasetRunChunk records the results of a chunk's first examples and
// puts its job back in the queue for the rest (domain.DatasetStore): the
// job's options become options (which say where the rest starts), the
// run's counts take the results, its chunks left stay, and the claim is
// taken off the job's attempts. Codes: ABORTED; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Datasets) YieldDatasetRunChunk(ctx context.Context, jobID, owner, runID string, results []*domain.DatasetRunResult, options map[string]string, now time.Time) error {
	now = StoredTime(now)
	in, c, failed, err := chunkResults(runID, results)
	if err != nil {
		return err
	}
	encoded, err := marshalJSON(options)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := guarded(ctx, tx, jobID, `
			UPDATE jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
			    attempts = attempts - 1, yields = yields + 1, options = ?, updated = ?
			WHERE id = ? AND status = 'running' AND lease_owner = ?`, encoded, now, jobID, owner); err != nil {
			return err
		}
		if err := execInserts(ctx, tx, []rowsInsert{in}); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			UPDATE dataset_runs SET
				true_positives = true_positives + ?, false_positives = false_positives + ?,
				true_negatives = true_negatives + ?, false_negatives = false_negatives + ?,
				failed = failed + ?, state = 'running', updated = ?
			WHERE id = ?`),
			c.TruePositives, c.FalsePositives, c.TrueNegatives, c.FalseNegatives, failed, now, runID)
		return err
	})
}
