package persistence

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// Feedback implements domain.FeedbackStore.
type Feedback struct {
	db *DB
}

var _ domain.FeedbackStore = (*Feedback)(nil)

// NewFeedback returns the feedback store on db.
func NewFeedback(db *DB) *Feedback { return &Feedback{db: db} }

// feedbackRow is one row of feedback_annotations.
type feedbackRow struct {
	ID             string    `db:"id"`
	AccountID      string    `db:"account_id"`
	JobID          string    `db:"job_id"`
	JobResultID    string    `db:"job_result_id"`
	TargetKey      string    `db:"target_key"`
	ContentHash    string    `db:"content_hash"`
	Modality       string    `db:"modality"`
	StartMs        *int64    `db:"start_ms"`
	EndMs          *int64    `db:"end_ms"`
	Label          string    `db:"label"`
	LabelID        string    `db:"label_id"`
	LabelVersionID string    `db:"label_version_id"`
	Expected       string    `db:"expected_outcome"`
	Actual         string    `db:"actual_outcome"`
	Comment        string    `db:"comment"`
	Created        time.Time `db:"created"`
	Updated        time.Time `db:"updated"`
}

const feedbackColumns = `id, account_id, job_id, job_result_id, target_key, content_hash, modality, start_ms, end_ms,
	label, label_id, label_version_id, expected_outcome, actual_outcome, comment, created, updated`

func (r *feedbackRow) toDomain() *domain.FeedbackAnnotation {
	a := &domain.FeedbackAnnotation{
		ID: r.ID, AccountID: r.AccountID, JobID: r.JobID, JobResultID: r.JobResultID, ContentHash: r.ContentHash,
		Label: r.Label, LabelID: r.LabelID, LabelVersionID: r.LabelVersionID,
		Expected: domain.EvaluationResult(r.Expected), Actual: domain.EvaluationResult(r.Actual),
		Comment: r.Comment, Created: r.Created.UTC(), Updated: r.Updated.UTC(),
	}
	if r.Modality != "" && r.StartMs != nil {
		a.Occurrence = &domain.Occurrence{Modality: domain.Modality(r.Modality), StartMs: *r.StartMs, EndMs: r.EndMs}
	}
	return a
}

// UpsertFeedback inserts a, or replaces the outcomes, comment, label ids and
// updated time of the annotation with the same job, result, target and
// label (INSERT ... ON CONFLICT DO UPDATE, atomic on both dialects, so
// concurrent posts of one annotation never make two); a.ID
// and a.Created become the stored annotation's. Codes: NOT_FOUND (no such
// job or account); UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Feedback) UpsertFeedback(ctx context.Context, a *domain.FeedbackAnnotation) error {
	a.Created, a.Updated = StoredTime(a.Created), StoredTime(a.Updated)
	modality := ""
	var start, end *int64
	if o := a.Occurrence; o != nil {
		modality, start, end = string(o.Modality), &o.StartMs, o.EndMs
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var kept struct {
			ID      string    `db:"id"`
			Created time.Time `db:"created"`
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO feedback_annotations (`+feedbackColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (job_id, job_result_id, target_key, label) DO UPDATE SET
				expected_outcome = excluded.expected_outcome, actual_outcome = excluded.actual_outcome,
				comment = excluded.comment, label_id = excluded.label_id,
				label_version_id = excluded.label_version_id, updated = excluded.updated`),
			a.ID, a.AccountID, a.JobID, a.JobResultID, a.TargetKey(), a.ContentHash, modality, start, end,
			a.Label, a.LabelID, a.LabelVersionID, string(a.Expected), string(a.Actual), a.Comment, a.Created, a.Updated)
		if err != nil {
			return describe(TranslateError(err), domain.NotFound, "job %q not found", a.JobID)
		}
		// Read the kept id and created back (not RETURNING: on SQLite a
		// returned column loses its declared type and would scan as int64).
		err = tx.GetContext(ctx, &kept, tx.Rebind(`SELECT id, created FROM feedback_annotations
			WHERE job_id = ? AND job_result_id = ? AND target_key = ? AND label = ?`),
			a.JobID, a.JobResultID, a.TargetKey(), a.Label)
		if err != nil {
			return TranslateError(err)
		}
		a.ID, a.Created = kept.ID, kept.Created.UTC()
		return nil
	})
}

// ListFeedback returns up to limit annotations of the account's job, oldest
// first (created, then id), after the cursor when it is set; an empty slice
// when there are none. Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Feedback) ListFeedback(ctx context.Context, accountID, jobID string, after *domain.FeedbackCursor, limit int) ([]*domain.FeedbackAnnotation, error) {
	q := `SELECT ` + feedbackColumns + ` FROM feedback_annotations WHERE job_id = ? AND account_id = ?`
	args := []any{jobID, accountID}
	if after != nil {
		c := StoredTime(after.Created)
		q += ` AND (created > ? OR (created = ? AND id > ?))`
		args = append(args, c, c, after.ID)
	}
	q += ` ORDER BY created, id LIMIT ?`
	args = append(args, limit)
	var rows []feedbackRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.FeedbackAnnotation, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}
