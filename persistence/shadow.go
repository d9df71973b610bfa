package persistence

// Shadow evaluations of policy versions (DESIGN §12): their results, stored
// in the transaction that finishes the shadow job, and their summaries.

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// Shadows implements domain.ShadowStore.
type Shadows struct {
	db *DB
}

var _ domain.ShadowStore = (*Shadows)(nil)

// NewShadows returns the shadow store on db.
func NewShadows(db *DB) *Shadows { return &Shadows{db: db} }

var shadowColumns = strings.Fields(`shadow_version_id job_result_id label account_id policy_id active_version_id
	job_id job_created content_hash active_outcome shadow_outcome disagrees created`)

// FinishShadowJob completes the shadow job held by owner and stores its
// results, all or nothing. Codes: ABORTED; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Shadows) FinishShadowJob(ctx context.Context, jobID, owner string, results []*domain.ShadowResult, now time.Time) error {
	now = StoredTime(now)
	in := rowsInsert{table: "shadow_results", columns: shadowColumns, rows: make([][]any, 0, len(results))}
	for _, r := range results {
		r.JobCreated, r.Created = StoredTime(r.JobCreated), StoredTime(r.Created)
		in.rows = append(in.rows, []any{r.ShadowVersionID, r.JobResultID, r.Label, r.AccountID, r.PolicyID, r.ActiveVersionID,
			r.JobID, r.JobCreated, r.ContentHash, string(r.Active), string(r.Shadow), r.Disagrees, r.Created})
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := guarded(ctx, tx, jobID, `
			UPDATE jobs
			SET status = 'completed', completed = ?, updated = ?, lease_owner = NULL, lease_expires_at = NULL
			WHERE id = ? AND status = 'running' AND lease_owner = ?`, now, now, jobID, owner); err != nil {
			return err
		}
		return execInserts(ctx, tx, []rowsInsert{in})
	})
}

// ShadowStats summarises a shadow version's evaluations. Codes:
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Shadows) ShadowStats(ctx context.Context, accountID, versionID string) (*domain.ShadowStats, error) {
	var totals struct {
		Evaluated     int `db:"evaluated"`
		Disagreements int `db:"disagreements"`
	}
	err := s.db.GetContext(ctx, &totals, s.db.Rebind(`
		SELECT COUNT(DISTINCT job_result_id) AS evaluated,
		       COUNT(DISTINCT CASE WHEN disagrees THEN job_result_id END) AS disagreements
		FROM shadow_results WHERE shadow_version_id = ? AND account_id = ?`), versionID, accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	var labels []struct {
		Label      string `db:"label"`
		ActiveTrue int    `db:"active_true"`
		ShadowTrue int    `db:"shadow_true"`
		BothTrue   int    `db:"both_true"`
	}
	err = s.db.SelectContext(ctx, &labels, s.db.Rebind(`
		SELECT label,
		       SUM(CASE WHEN active_outcome = ? THEN 1 ELSE 0 END) AS active_true,
		       SUM(CASE WHEN shadow_outcome = ? THEN 1 ELSE 0 END) AS shadow_true,
		       SUM(CASE WHEN active_outcome = ? AND shadow_outcome = ? THEN 1 ELSE 0 END) AS both_true
		FROM shadow_results WHERE shadow_version_id = ? AND account_id = ?
		GROUP BY label ORDER BY label`),
		string(rules.OutcomeTrue), string(rules.OutcomeTrue), string(rules.OutcomeTrue), string(rules.OutcomeTrue), versionID, accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	st := &domain.ShadowStats{Evaluated: totals.Evaluated, Disagreements: totals.Disagreements,
		Agreements: totals.Evaluated - totals.Disagreements, Labels: make([]domain.ShadowLabelStats, len(labels))}
	for i, l := range labels {
		st.Labels[i] = domain.ShadowLabelStats{Label: l.Label, ActiveTrue: l.ActiveTrue, ShadowTrue: l.ShadowTrue, BothTrue: l.BothTrue}
	}
	return st, nil
}

type shadowRow struct {
	ShadowVersionID string    `db:"shadow_version_id"`
	JobResultID     string    `db:"job_result_id"`
	Label           string    `db:"label"`
	AccountID       string    `db:"account_id"`
	PolicyID        string    `db:"policy_id"`
	ActiveVersionID string    `db:"active_version_id"`
	JobID           string    `db:"job_id"`
	JobCreated      time.Time `db:"job_created"`
	ContentHash     string    `db:"content_hash"`
	Active          string    `db:"active_outcome"`
	Shadow          string    `db:"shadow_outcome"`
	Disagrees       bool      `db:"disagrees"`
	Created         time.Time `db:"created"`
}

// ListShadowDisagreements returns up to limit disagreeing results of a
// shadow version after the cursor. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Shadows) ListShadowDisagreements(ctx context.Context, accountID, versionID string, after *domain.ShadowCursor, limit int) ([]*domain.ShadowResult, error) {
	q := `SELECT ` + strings.Join(shadowColumns, ", ") + ` FROM shadow_results
		WHERE shadow_version_id = ? AND account_id = ? AND disagrees`
	args := []any{versionID, accountID}
	if after != nil {
		q += ` AND (job_result_id > ? OR (job_result_id = ? AND label > ?))`
		args = append(args, after.JobResultID, after.JobResultID, after.Label)
	}
	q += ` ORDER BY job_result_id, label LIMIT ?`
	var rows []shadowRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), append(args, limit)...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.ShadowResult, len(rows))
	for i, r := range rows {
		out[i] = &domain.ShadowResult{ShadowVersionID: r.ShadowVersionID, JobResultID: r.JobResultID, Label: r.Label,
			AccountID: r.AccountID, PolicyID: r.PolicyID, ActiveVersionID: r.ActiveVersionID, JobID: r.JobID,
			JobCreated: r.JobCreated.UTC(), ContentHash: r.ContentHash, Active: rules.Outcome(r.Active),
			Shadow: rules.Outcome(r.Shadow), Disagrees: r.Disagrees, Created: r.Created.UTC()}
	}
	return out, nil
}
