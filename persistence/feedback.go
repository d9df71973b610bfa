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
// label (atomic on both dialects, so concurrent posts of one annotation
// never make two); a.ID and a.Created become the stored annotation's. The
// job's version metric counts change by the judgement's difference.
// Codes: NOT_FOUND (no such job or account); UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Feedback) UpsertFeedback(ctx context.Context, a *domain.FeedbackAnnotation) error {
	a.Created, a.Updated = StoredTime(a.Created), StoredTime(a.Updated)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		// The job must exist and stay while the annotation is written:
		// PostgreSQL's partitioned history has no foreign key to see to
		// it (migration 00094), and expiry may be deleting the job.
		var jobs []metricJob
		err := tx.SelectContext(ctx, &jobs, tx.Rebind(`SELECT account_id, job_type, status, policy_version_id, label_version_id, created
			FROM jobs WHERE id = ? AND account_id = ?`+s.db.forShare()), a.JobID, a.AccountID)
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return domain.Errorf(domain.NotFound, "job %q not found", a.JobID)
		}
		old, err := s.writeAnnotation(ctx, tx, a)
		if err != nil {
			return describe(TranslateError(err), domain.NotFound, "job %q not found", a.JobID)
		}
		counts := metricDeltas{}
		modality := ""
		if a.Occurrence != nil {
			modality = string(a.Occurrence.Modality)
		}
		if c, ok := judgement(modality, string(a.Expected), string(a.Actual)); ok {
			counts.add(jobs[0], a.Label, c, 1)
		}
		if old != nil {
			if c, ok := judgement(old.Modality, old.Expected, old.Actual); ok {
				counts.add(jobs[0], a.Label, c, -1)
			}
		}
		return counts.apply(ctx, s.db, tx)
	})
}

// writeAnnotation inserts a, or updates the annotation of its key and
// returns what that one was. The insert comes first and does nothing on a
// conflict: PostgreSQL makes it wait for a concurrent insert of the key
// to commit, so the row read (and locked) after it is the one replaced,
// and its judgement is taken out of the counts exactly once.
func (s *Feedback) writeAnnotation(ctx context.Context, tx *sqlx.Tx, a *domain.FeedbackAnnotation) (*feedbackRow, error) {
	modality := ""
	var start, end *int64
	if o := a.Occurrence; o != nil {
		modality, start, end = string(o.Modality), &o.StartMs, o.EndMs
	}
	res, err := tx.ExecContext(ctx, tx.Rebind(`
		INSERT INTO feedback_annotations (`+feedbackColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (job_id, job_result_id, target_key, label) DO NOTHING`),
		a.ID, a.AccountID, a.JobID, a.JobResultID, a.TargetKey(), a.ContentHash, modality, start, end,
		a.Label, a.LabelID, a.LabelVersionID, string(a.Expected), string(a.Actual), a.Comment, a.Created, a.Updated)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return nil, err
	}
	var old feedbackRow
	err = tx.GetContext(ctx, &old, tx.Rebind(`SELECT `+feedbackColumns+` FROM feedback_annotations
		WHERE job_id = ? AND job_result_id = ? AND target_key = ? AND label = ?`+s.db.forUpdate()),
		a.JobID, a.JobResultID, a.TargetKey(), a.Label)
	if err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, tx.Rebind(`
		UPDATE feedback_annotations SET expected_outcome = ?, actual_outcome = ?, comment = ?, label_id = ?,
			label_version_id = ?, updated = ?
		WHERE job_id = ? AND job_result_id = ? AND target_key = ? AND label = ?`),
		string(a.Expected), string(a.Actual), a.Comment, a.LabelID, a.LabelVersionID, a.Updated,
		a.JobID, a.JobResultID, a.TargetKey(), a.Label)
	if err != nil {
		return nil, err
	}
	a.ID, a.Created = old.ID, old.Created.UTC()
	return &old, nil
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
