package persistence

// Reads of a job's outcome: its results and its label hits by job. Apart
// from jobs.go because they read the job_results and label_hits tables, not
// the job's row; the bounded hit reads of the stream are LabelHits
// (label_hits.go), which share labelHitRow.

import (
	"context"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/jmoiron/sqlx"
)

type jobResultRow struct {
	ID           string    `db:"id"`
	JobID        string    `db:"job_id"`
	Seq          int       `db:"seq"`
	ContentHash  string    `db:"content_hash"`
	Metadata     string    `db:"metadata"`
	Report       string    `db:"report"`
	ReportPacked []byte    `db:"report_packed"`
	ErrorReason  string    `db:"error_reason"`
	ErrorMessage string    `db:"error_message"`
	Created      time.Time `db:"created"`
}

// ListJobResults returns a job's results in entry order. Codes:
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ListJobResults(ctx context.Context, jobID string) ([]*domain.JobResult, error) {
	var rows []jobResultRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT id, job_id, seq, content_hash, metadata, report, report_packed, error_reason, error_message, created
		FROM job_results WHERE job_id = ? ORDER BY seq`), jobID)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.JobResult, len(rows))
	for i, r := range rows {
		if out[i], err = r.toDomain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// maxResultsJobs bounds the job ids of one ListResultsOfJobs statement, far
// under SQLite's limit of bound variables (32,766) and PostgreSQL's (65,535).
const maxResultsJobs = 1000

// ListResultsOfJobs returns the results of several jobs, each job's in
// entry order, in one statement per 1,000 jobs (a job listing's page).
// Jobs without results are absent from the map. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ListResultsOfJobs(ctx context.Context, jobIDs []string) (map[string][]*domain.JobResult, error) {
	out := make(map[string][]*domain.JobResult, len(jobIDs))
	for len(jobIDs) > 0 {
		chunk := jobIDs[:min(len(jobIDs), maxResultsJobs)]
		jobIDs = jobIDs[len(chunk):]
		q, args, err := sqlx.In(`
			SELECT id, job_id, seq, content_hash, metadata, report, report_packed, error_reason, error_message, created
			FROM job_results WHERE job_id IN (?) ORDER BY job_id, seq`, chunk)
		if err != nil {
			return nil, err
		}
		var rows []jobResultRow
		if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
			return nil, TranslateError(err)
		}
		for _, r := range rows {
			jr, err := r.toDomain()
			if err != nil {
				return nil, err
			}
			out[r.JobID] = append(out[r.JobID], jr)
		}
	}
	return out, nil
}

func (r *jobResultRow) toDomain() (*domain.JobResult, error) {
	jr := &domain.JobResult{ID: r.ID, JobID: r.JobID, Index: r.Seq, ContentHash: r.ContentHash, Created: r.Created.UTC()}
	if err := unmarshalJSON(r.Metadata, &jr.Metadata); err != nil {
		return nil, err
	}
	if r.ReportPacked != nil || r.Report != "" {
		jr.Report = &rules.Report{}
		if err := readJSONColumn(r.ReportPacked, r.Report, jr.Report); err != nil {
			return nil, err
		}
	}
	if r.ErrorReason != "" {
		jr.Error = &domain.JobError{Reason: domain.JobErrorReason(r.ErrorReason), Message: r.ErrorMessage}
	}
	return jr, nil
}

// labelHitColumns is the select list of labelHitRow.
var labelHitColumns = strings.Join(hitInsertColumns, ", ")

type labelHitRow struct {
	JobID             string  `db:"job_id"`
	JobResultID       string  `db:"job_result_id"`
	Seq               int     `db:"seq"`
	Label             string  `db:"label"`
	Modality          string  `db:"modality"`
	Score             float64 `db:"score"`
	StartMs           int64   `db:"start_ms"`
	EndMs             *int64  `db:"end_ms"`
	FrameStartMs      *int64  `db:"frame_start_ms"`
	FrameEndMs        *int64  `db:"frame_end_ms"`
	TranscriptStartMs *int64  `db:"transcript_start_ms"`
	TranscriptEndMs   *int64  `db:"transcript_end_ms"`
	Spans             string  `db:"spans"` // JSON; "" for none
}

// ListLabelHits returns up to limit hits of a job after afterSeq, in seq
// order, of one result when jobResultID is set. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ListLabelHits(ctx context.Context, jobID, jobResultID string, afterSeq, limit int) ([]*domain.LabelHit, error) {
	q := `SELECT ` + labelHitColumns + ` FROM label_hits WHERE job_id = ? AND seq > ?`
	args := []any{jobID, afterSeq}
	if jobResultID != "" {
		q += ` AND job_result_id = ?`
		args = append(args, jobResultID)
	}
	q += ` ORDER BY seq LIMIT ?`
	args = append(args, limit)
	var rows []labelHitRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, TranslateError(err)
	}
	return toDomainHits(rows)
}
