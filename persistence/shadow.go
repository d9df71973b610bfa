package persistence

// Shadow evaluations of policy versions (docs/api.md#extension-endpoints): stored in the
// transaction that finishes the shadow job, and summarised.

import (
	"context"
	"slices"
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

var (
	shadowEvaluationColumns = strings.Fields(`shadow_version_id job_result_id account_id policy_id active_version_id
		job_id job_created content_hash disagrees created`)
	shadowResultColumns = strings.Fields(`shadow_version_id job_result_id label active_outcome shadow_outcome disagrees job_id`)
)

// FinishShadowJobs completes the shadow jobs still held by their owners
// and stores their evaluations, in one transaction: under a stream of live
// jobs, the shadows of one claim share a commit. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Shadows) FinishShadowJobs(ctx context.Context, finishes []domain.ShadowFinish, now time.Time) (int, error) {
	now = StoredTime(now)
	finished := 0
	held := make([]heldJob, len(finishes))
	for i, f := range finishes {
		held[i] = heldJob{f.JobID, f.Owner}
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		done, err := finishHeld(ctx, tx, held, domain.JobCompleted, nil, now)
		if err != nil {
			return err
		}
		finished = len(done)
		es := rowsInsert{table: "shadow_evaluations", columns: shadowEvaluationColumns}
		ls := rowsInsert{table: "shadow_results", columns: shadowResultColumns}
		for _, f := range finishes {
			if !done[f.JobID] {
				continue // another holder has it: its evaluations are that one's to store
			}
			addShadowRows(&es, &ls, f.Evaluations)
		}
		return execInserts(ctx, tx, []rowsInsert{es, ls})
	})
	return finished, err
}

// YieldShadowJob stores a shadow job's evaluations so far and queues it
// again with options (domain.ShadowStore.YieldShadowJob). The claim that
// is given back is taken off attempts, which counts the claims that ended
// in an error or a lost lease. Codes: ABORTED; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Shadows) YieldShadowJob(ctx context.Context, y domain.ShadowFinish, options map[string]string, now time.Time) error {
	encoded, err := marshalJSON(options)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := guarded(ctx, tx, y.JobID, `
			UPDATE jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
			    attempts = attempts - 1, yields = yields + 1, options = ?, updated = ?
			WHERE id = ? AND status = 'running' AND lease_owner = ?`,
			encoded, StoredTime(now), y.JobID, y.Owner); err != nil {
			return err
		}
		es := rowsInsert{table: "shadow_evaluations", columns: shadowEvaluationColumns}
		ls := rowsInsert{table: "shadow_results", columns: shadowResultColumns}
		addShadowRows(&es, &ls, y.Evaluations)
		return execInserts(ctx, tx, []rowsInsert{es, ls})
	})
}

// addShadowRows adds the rows of evaluations to their inserts.
func addShadowRows(es, ls *rowsInsert, evaluations []*domain.ShadowEvaluation) {
	for _, e := range evaluations {
		e.JobCreated, e.Created = StoredTime(e.JobCreated), StoredTime(e.Created)
		es.rows = append(es.rows, []any{e.ShadowVersionID, e.JobResultID, e.AccountID, e.PolicyID, e.ActiveVersionID,
			e.JobID, e.JobCreated, e.ContentHash, e.Disagrees, e.Created})
		for _, l := range e.Labels {
			ls.rows = append(ls.rows, []any{e.ShadowVersionID, e.JobResultID, l.Label, string(l.Active), string(l.Shadow), l.Disagrees, e.JobID})
		}
	}
}

// ShadowStats summarises a shadow version's evaluations. Codes:
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Shadows) ShadowStats(ctx context.Context, accountID, versionID string, labels []string) (*domain.ShadowStats, error) {
	var totals struct {
		Evaluated     int  `db:"evaluated"`
		Disagreements *int `db:"disagreements"`
	}
	err := s.db.GetContext(ctx, &totals, s.db.Rebind(`
		SELECT COUNT(*) AS evaluated, SUM(CASE WHEN disagrees THEN 1 ELSE 0 END) AS disagreements
		FROM shadow_evaluations WHERE shadow_version_id = ? AND account_id = ?`), versionID, accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	var rows []struct {
		Label      string `db:"label"`
		ActiveTrue int    `db:"active_true"`
		ShadowTrue int    `db:"shadow_true"`
		BothTrue   int    `db:"both_true"`
	}
	// The account is the evaluation's: a label row has no account of its own.
	err = s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT r.label,
		       SUM(CASE WHEN r.active_outcome = ? THEN 1 ELSE 0 END) AS active_true,
		       SUM(CASE WHEN r.shadow_outcome = ? THEN 1 ELSE 0 END) AS shadow_true,
		       SUM(CASE WHEN r.active_outcome = ? AND r.shadow_outcome = ? THEN 1 ELSE 0 END) AS both_true
		FROM shadow_results r JOIN shadow_evaluations e
		  ON e.shadow_version_id = r.shadow_version_id AND e.job_result_id = r.job_result_id
		WHERE r.shadow_version_id = ? AND e.account_id = ?
		GROUP BY r.label`),
		string(rules.OutcomeTrue), string(rules.OutcomeTrue), string(rules.OutcomeTrue), string(rules.OutcomeTrue), versionID, accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	st := &domain.ShadowStats{Evaluated: totals.Evaluated}
	if totals.Disagreements != nil {
		st.Disagreements = *totals.Disagreements
	}
	st.Agreements = st.Evaluated - st.Disagreements
	byLabel := map[string]domain.ShadowLabelStats{}
	for _, l := range labels {
		byLabel[l] = domain.ShadowLabelStats{Label: l}
	}
	for _, r := range rows {
		byLabel[r.Label] = domain.ShadowLabelStats{Label: r.Label, ActiveTrue: r.ActiveTrue, ShadowTrue: r.ShadowTrue, BothTrue: r.BothTrue}
	}
	st.Labels = make([]domain.ShadowLabelStats, 0, len(byLabel))
	for _, l := range byLabel {
		st.Labels = append(st.Labels, l)
	}
	slices.SortFunc(st.Labels, func(a, b domain.ShadowLabelStats) int { return strings.Compare(a.Label, b.Label) })
	return st, nil
}

// ListShadowDisagreements returns up to limit disagreeing labels of a
// shadow version's evaluations after the cursor. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Shadows) ListShadowDisagreements(ctx context.Context, accountID, versionID string, after *domain.ShadowCursor, limit int) ([]*domain.ShadowDisagreement, error) {
	q := `SELECT e.job_id, r.job_result_id, e.content_hash, r.label, r.active_outcome, r.shadow_outcome
		FROM shadow_results r JOIN shadow_evaluations e
		  ON e.shadow_version_id = r.shadow_version_id AND e.job_result_id = r.job_result_id
		WHERE r.shadow_version_id = ? AND e.account_id = ? AND r.disagrees`
	args := []any{versionID, accountID}
	if after != nil {
		q += ` AND (r.job_result_id > ? OR (r.job_result_id = ? AND r.label > ?))`
		args = append(args, after.JobResultID, after.JobResultID, after.Label)
	}
	q += ` ORDER BY r.job_result_id, r.label LIMIT ?`
	var rows []struct {
		JobID       string `db:"job_id"`
		JobResultID string `db:"job_result_id"`
		ContentHash string `db:"content_hash"`
		Label       string `db:"label"`
		Active      string `db:"active_outcome"`
		Shadow      string `db:"shadow_outcome"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), append(args, limit)...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.ShadowDisagreement, len(rows))
	for i, r := range rows {
		out[i] = &domain.ShadowDisagreement{JobID: r.JobID, JobResultID: r.JobResultID, ContentHash: r.ContentHash, Label: r.Label,
			Active: rules.Outcome(r.Active), Shadow: rules.Outcome(r.Shadow)}
	}
	return out, nil
}
