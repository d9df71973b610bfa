package persistence

// A running job storing the outcome of its finished items as it goes, so
// that the process running it holds a few items' reports rather than the
// whole job's; and the paged read of a job's results that answers for
// such a job without reading all of them at once.

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// SaveJobResults stores results and hits of a running job owner holds
// (domain.JobStore.SaveJobResults). Codes: ABORTED when owner no longer
// holds it (then nothing is stored); NOT_FOUND for a hit of no result
// given; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) SaveJobResults(ctx context.Context, id, owner string, results []*domain.JobResult, hits []*domain.LabelHit) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := guarded(ctx, tx, id, `
			UPDATE jobs SET results_saved = TRUE
			WHERE id = ? AND status = 'running' AND lease_owner = ?`, id, owner); err != nil {
			return err
		}
		return s.db.insertOutcome(ctx, tx, id, results, hits)
	})
}

// ListJobResultsAfter returns up to limit results of a job whose entry
// index is past afterIndex, in entry order
// (domain.JobStore.ListJobResultsAfter). Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Jobs) ListJobResultsAfter(ctx context.Context, jobID string, afterIndex, limit int) ([]*domain.JobResult, error) {
	var rows []jobResultRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT id, job_id, seq, content_hash, metadata, report, report_packed, error_reason, error_message, created
		FROM job_results WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?`), jobID, afterIndex, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.JobResult, len(rows))
	for i := range rows {
		if out[i], err = rows[i].toDomain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
