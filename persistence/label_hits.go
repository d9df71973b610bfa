package persistence

import (
	"context"

	"github.com/contenteval/contenteval/domain"
)

// LabelHits implements domain.LabelHitRangeStore: bounded reads of the
// label_hits table that the job store writes.
type LabelHits struct {
	db *DB
}

var _ domain.LabelHitRangeStore = (*LabelHits)(nil)

// NewLabelHits returns the label hit range reader on db.
func NewLabelHits(db *DB) *LabelHits { return &LabelHits{db: db} }

// ListLabelHitsInRange returns the job's hits with afterSeq < seq <= lastSeq,
// in seq order. The explicit upper bound keeps the read at most
// lastSeq-afterSeq rows whatever plan the database picks: PostgreSQL without
// fresh statistics (or for a job much larger than the average) otherwise
// sorts every hit after the cursor. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *LabelHits) ListLabelHitsInRange(ctx context.Context, jobID string, afterSeq, lastSeq int) ([]*domain.LabelHit, error) {
	var rows []labelHitRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT `+labelHitColumns+`
		FROM label_hits WHERE job_id = ? AND seq > ? AND seq <= ? ORDER BY seq`), jobID, afterSeq, lastSeq)
	if err != nil {
		return nil, TranslateError(err)
	}
	return toDomainHits(rows)
}

// ListResultHits returns up to limit hits of the job result resultID with
// seq > afterSeq, in seq order, whatever job the result belongs to (result
// ids are unique; the caller checks the job). The query names only the
// result, so the (job_result_id, seq) index serves both the filter and the
// order: with job_id in the condition, PostgreSQL may take the primary key
// instead and sort every hit of the job. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *LabelHits) ListResultHits(ctx context.Context, resultID string, afterSeq, limit int) ([]*domain.LabelHit, error) {
	var rows []labelHitRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT `+labelHitColumns+`
		FROM label_hits WHERE job_result_id = ? AND seq > ? ORDER BY job_result_id, seq LIMIT ?`), resultID, afterSeq, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	return toDomainHits(rows)
}

func toDomainHits(rows []labelHitRow) ([]*domain.LabelHit, error) {
	out := make([]*domain.LabelHit, len(rows))
	for i, r := range rows {
		out[i] = &domain.LabelHit{
			JobID: r.JobID, JobResultID: r.JobResultID, Seq: r.Seq, Label: r.Label,
			Modality: domain.Modality(r.Modality), Score: r.Score, StartMs: r.StartMs, EndMs: r.EndMs,
			FrameStartMs: r.FrameStartMs, FrameEndMs: r.FrameEndMs,
			TranscriptStartMs: r.TranscriptStartMs, TranscriptEndMs: r.TranscriptEndMs,
		}
		if err := unmarshalJSON(r.Spans, &out[i].Spans); err != nil {
			return nil, err
		}
	}
	return out, nil
}
