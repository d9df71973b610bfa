package persistence

// A batch's items: the batch_items rows tying each input line to the job
// that evaluates it, written while the batch is submitted, and the reads
// that join them to their jobs for progress and the output file. Apart from
// batch_jobs.go because they work on items and jobs, not the batch's row.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// InsertBatchItems records items of a batch in BatchPreprocessed leased to
// owner. Codes: ABORTED, ALREADY_EXISTS; UNAVAILABLE.
func (s *BatchJobs) InsertBatchItems(ctx context.Context, batchID, owner string, items []*domain.BatchItem) error {
	if len(items) == 0 {
		return nil
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		// Guard: the batch is still being submitted by owner. On PostgreSQL
		// FOR UPDATE holds off a concurrent cancel until commit.
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM batch_jobs
			WHERE id = ? AND state = 'preprocessed' AND lease_owner = ?`), batchID, owner); err != nil {
			return err
		}
		if n == 0 {
			return domain.Errorf(domain.Aborted, "batch job %q is no longer being submitted by %s", batchID, owner)
		}
		const cols = 7
		const perStmt = 500 // well under both dialects' bind limits
		for start := 0; start < len(items); start += perStmt {
			chunk := items[start:min(start+perStmt, len(items))]
			q := `INSERT INTO batch_items (batch_id, seq, ref_id, job_id, job_index, content_hash, status) VALUES ` +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", len(chunk)), ", ")
			args := make([]any, 0, cols*len(chunk))
			for _, it := range chunk {
				args = append(args, batchID, it.Seq, it.RefID, it.JobID, it.JobIndex, it.ContentHash, string(it.Status))
			}
			if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
				return err
			}
		}
		return nil
	})
	return describe(err, domain.AlreadyExists, "batch job %q already has these items", batchID)
}

// cancelPendingBatchJobs moves the batch's jobs that have not started to
// canceled: a guarded UPDATE (status = 'pending'), so a job a worker has
// claimed meanwhile is left to finish.
func cancelPendingBatchJobs(ctx context.Context, tx *sqlx.Tx, batchID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, tx.Rebind(`
		UPDATE jobs SET status = 'canceled', completed = ?, updated = ?
		WHERE status = 'pending' AND id IN (SELECT job_id FROM batch_items WHERE batch_id = ?)`),
		now, now, batchID)
	return err
}

// MarkBatchItemsSubmitted marks items [from, to) submitted (see
// domain.BatchStore). Codes: ABORTED; UNAVAILABLE.
func (s *BatchJobs) MarkBatchItemsSubmitted(ctx context.Context, batchID, owner string, from, to int, now time.Time) error {
	cancelled := false
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var r batchRow
		if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+batchColumns+` FROM batch_jobs WHERE id = ?`+s.db.forUpdate()), batchID); err != nil {
			return describe(TranslateError(err), domain.NotFound, "batch job %q not found", batchID)
		}
		if r.State == string(domain.BatchCancelled) {
			cancelled = true // commit the cancel of jobs created after the batch's
			return cancelPendingBatchJobs(ctx, tx, batchID, StoredTime(now))
		}
		if r.State != string(domain.BatchPreprocessed) || r.LeaseOwner != owner {
			return domain.Errorf(domain.Aborted, "batch job %q is no longer being submitted by %s", batchID, owner)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE batch_items SET status = 'submitted'
			WHERE batch_id = ? AND seq >= ? AND seq < ? AND status = 'pending'`), batchID, from, to)
		return err
	})
	if err == nil && cancelled {
		return domain.Errorf(domain.Aborted, "batch job %q was cancelled", batchID)
	}
	return err
}

type batchItemRow struct {
	BatchID     string `db:"batch_id"`
	Seq         int    `db:"seq"`
	RefID       string `db:"ref_id"`
	JobID       string `db:"job_id"`
	JobIndex    int    `db:"job_index"`
	ContentHash string `db:"content_hash"`
	Status      string `db:"status"`
}

// ListBatchItems returns items with seq >= from in order. Codes:
// UNAVAILABLE.
func (s *BatchJobs) ListBatchItems(ctx context.Context, batchID string, from, limit int) ([]*domain.BatchItem, error) {
	var rows []batchItemRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT batch_id, seq, ref_id, job_id, job_index, content_hash, status
		FROM batch_items WHERE batch_id = ? AND seq >= ? ORDER BY seq LIMIT ?`), batchID, from, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.BatchItem, len(rows))
	for i, r := range rows {
		out[i] = &domain.BatchItem{BatchID: r.BatchID, Seq: r.Seq, RefID: r.RefID, JobID: r.JobID, JobIndex: r.JobIndex,
			ContentHash: r.ContentHash, Status: domain.BatchItemStatus(r.Status)}
	}
	return out, nil
}

// BatchProgress counts items with a terminal job and, of those, the ones
// that did not complete. Codes: UNAVAILABLE.
func (s *BatchJobs) BatchProgress(ctx context.Context, batchID string) (int, int, error) {
	var r struct {
		Processed int `db:"processed"`
		Failed    int `db:"failed"`
	}
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`
		SELECT COALESCE(SUM(CASE WHEN j.status IN ('completed', 'failed', 'canceled') THEN 1 ELSE 0 END), 0) AS processed,
		       COALESCE(SUM(CASE WHEN j.status IN ('failed', 'canceled') THEN 1 ELSE 0 END), 0) AS failed
		FROM batch_items bi JOIN jobs j ON j.id = bi.job_id
		WHERE bi.batch_id = ?`), batchID)
	if err != nil {
		return 0, 0, TranslateError(err)
	}
	return r.Processed, r.Failed, nil
}

type batchOutcomeRow struct {
	Seq           int     `db:"seq"`
	RefID         string  `db:"ref_id"`
	JobID         string  `db:"job_id"`
	ItemHash      string  `db:"item_hash"`
	JobStatus     *string `db:"job_status"`
	JobErrReason  *string `db:"job_error_reason"`
	JobErrMessage *string `db:"job_error_message"`
	ResultID      *string `db:"result_id"`
	ResultHash    *string `db:"result_hash"`
	Metadata      *string `db:"result_metadata"`
	Report        *string `db:"result_report"`
	ReportPacked  []byte  `db:"result_report_packed"`
	ResErrReason  *string `db:"result_error_reason"`
	ResErrMessage *string `db:"result_error_message"`
}

// ListBatchOutcomes returns items with their job's outcome, in order.
// Codes: UNAVAILABLE; INTERNAL for a stored report that is not JSON.
func (s *BatchJobs) ListBatchOutcomes(ctx context.Context, batchID string, from, limit int) ([]*domain.BatchOutcome, error) {
	var rows []batchOutcomeRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT bi.seq, bi.ref_id, bi.job_id, bi.content_hash AS item_hash,
		       j.status AS job_status, j.error_reason AS job_error_reason, j.error_message AS job_error_message,
		       r.id AS result_id, r.content_hash AS result_hash, r.metadata AS result_metadata,
		       r.report AS result_report, r.report_packed AS result_report_packed, r.error_reason AS result_error_reason,
		       r.error_message AS result_error_message
		FROM batch_items bi
		LEFT JOIN jobs j ON j.id = bi.job_id
		LEFT JOIN job_results r ON r.job_id = bi.job_id AND r.seq = bi.job_index AND j.status = 'completed'
		WHERE bi.batch_id = ? AND bi.seq >= ?
		ORDER BY bi.seq LIMIT ?`), batchID, from, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.BatchOutcome, len(rows))
	for i, r := range rows {
		o := &domain.BatchOutcome{Seq: r.Seq, RefID: r.RefID, JobID: r.JobID, ContentHash: r.ItemHash}
		if r.JobStatus != nil {
			o.JobStatus = domain.JobStatus(*r.JobStatus)
		}
		if r.JobErrReason != nil && *r.JobErrReason != "" {
			o.JobError = &domain.JobError{Reason: domain.JobErrorReason(*r.JobErrReason), Message: strDeref(r.JobErrMessage)}
		}
		if r.ResultID != nil {
			res := &domain.JobResult{ID: *r.ResultID, JobID: r.JobID, ContentHash: strDeref(r.ResultHash)}
			if m := strDeref(r.Metadata); m != "" {
				if err := json.Unmarshal([]byte(m), &res.Metadata); err != nil {
					return nil, err
				}
			}
			if rep := strDeref(r.Report); rep != "" || r.ReportPacked != nil {
				res.Report = &rules.Report{}
				if err := readJSONColumn(r.ReportPacked, rep, res.Report); err != nil {
					return nil, err
				}
			}
			if reason := strDeref(r.ResErrReason); reason != "" {
				res.Error = &domain.JobError{Reason: domain.JobErrorReason(reason), Message: strDeref(r.ResErrMessage)}
			}
			if res.ContentHash != "" {
				o.ContentHash = res.ContentHash
			}
			o.Result = res
		}
		out[i] = o
	}
	return out, nil
}

func strDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
