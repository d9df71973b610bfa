package persistence

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// LabelVersions implements domain.LabelVersionStore. Versions are
// append-only: this file has INSERT and SELECT statements only.
type LabelVersions struct {
	db *DB
}

var _ domain.LabelVersionStore = (*LabelVersions)(nil)

// NewLabelVersions returns the label version store on db.
func NewLabelVersions(db *DB) *LabelVersions { return &LabelVersions{db: db} }

// labelVersionRow is one row of label_versions.
type labelVersionRow struct {
	ID                   string    `db:"id"`
	LabelID              string    `db:"label_id"`
	AccountID            string    `db:"account_id"`
	Seq                  int64     `db:"seq"`
	Text                 string    `db:"text"`
	Blob                 []byte    `db:"blob"`
	Description          string    `db:"description"`
	GlobalContext        string    `db:"global_context"`
	ParentID             string    `db:"parent_id"`
	CreatedByID          string    `db:"created_by_id"`
	EvalOptions          string    `db:"eval_options"`
	SignalCount          int       `db:"signal_count"`
	TotalSignalTokens    int       `db:"total_signal_tokens"`
	ComplexityScore      float64   `db:"complexity_score"`
	DSLTokens            int       `db:"dsl_tokens"`
	GlobalContextTokens  int       `db:"global_context_tokens"`
	SignalTokens         int       `db:"signal_tokens"`
	SignalSpecialTokens  int       `db:"signal_special_tokens"`
	ContentSpecialTokens int       `db:"content_special_tokens"`
	Created              time.Time `db:"created"`
}

const labelVersionColumns = `id, label_id, account_id, seq, text, blob, description, global_context,
	parent_id, created_by_id, eval_options, signal_count, total_signal_tokens, complexity_score,
	dsl_tokens, global_context_tokens, signal_tokens, signal_special_tokens, content_special_tokens, created`

func (r *labelVersionRow) toDomain() (*domain.LabelVersion, error) {
	v := &domain.LabelVersion{
		ID: r.ID, LabelID: r.LabelID, AccountID: r.AccountID, SequentialVersion: r.Seq,
		Text: r.Text, Blob: r.Blob, Description: r.Description, GlobalContext: r.GlobalContext,
		ParentLabelVersionID: r.ParentID, CreatedByID: r.CreatedByID,
		SignalCount: r.SignalCount, TotalSignalTokens: r.TotalSignalTokens, ComplexityScore: r.ComplexityScore,
		TokenCounts: domain.LabelTokenCounts{
			DSLTokenCount: r.DSLTokens, GlobalContextTokens: r.GlobalContextTokens, SignalTokens: r.SignalTokens,
			SignalSpecialTokens: r.SignalSpecialTokens, ContentSpecialTokens: r.ContentSpecialTokens,
		},
		Created: r.Created.UTC(),
	}
	if r.EvalOptions != "" {
		if err := json.Unmarshal([]byte(r.EvalOptions), &v.EvalOptions); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// CreateLabelVersion assigns v.SequentialVersion and inserts v (the caller
// sets ID and Created, normalized in place). The sequence number comes from
// a guarded increment of labels.last_version_seq in the same transaction:
// on PostgreSQL the UPDATE holds the label's row lock until commit, so
// concurrent creators take turns; on SQLite the write transaction excludes
// them. A failure rolls the increment back, so numbers have no gaps, and
// UNIQUE (label_id, seq) backs the rule up. Codes: NOT_FOUND (no such label
// of the account, or deleted), INVALID_ARGUMENT (the parent is not a version
// of this label), ALREADY_EXISTS (the id is taken); ABORTED, UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *LabelVersions) CreateLabelVersion(ctx context.Context, v *domain.LabelVersion) error {
	v.Created = StoredTime(v.Created)
	opts, err := json.Marshal(v.EvalOptions)
	if err != nil {
		return err
	}
	var blob any
	if v.Blob != nil {
		blob = v.Blob
	}
	var seq int64
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &seq, tx.Rebind(`
			UPDATE labels SET last_version_seq = last_version_seq + 1
			WHERE id = ? AND account_id = ? AND deleted_at IS NULL
			RETURNING last_version_seq`), v.LabelID, v.AccountID)
		if err != nil {
			return describe(TranslateError(err), domain.NotFound, "label %q not found", v.LabelID)
		}
		if v.ParentLabelVersionID != "" {
			var parentLabel string
			err := tx.GetContext(ctx, &parentLabel, tx.Rebind(`SELECT label_id FROM label_versions WHERE id = ?`), v.ParentLabelVersionID)
			if err != nil && domain.ErrorCode(TranslateError(err)) != domain.NotFound {
				return TranslateError(err)
			}
			if err != nil || parentLabel != v.LabelID {
				return domain.InvalidField("parentLabelVersionId", "not a version of this label")
			}
		}
		_, err = tx.ExecContext(ctx, tx.Rebind(`INSERT INTO label_versions (`+labelVersionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			v.ID, v.LabelID, v.AccountID, seq, v.Text, blob, v.Description, v.GlobalContext,
			v.ParentLabelVersionID, v.CreatedByID, string(opts), v.SignalCount, v.TotalSignalTokens, v.ComplexityScore,
			v.TokenCounts.DSLTokenCount, v.TokenCounts.GlobalContextTokens, v.TokenCounts.SignalTokens,
			v.TokenCounts.SignalSpecialTokens, v.TokenCounts.ContentSpecialTokens, v.Created)
		return describe(TranslateError(err), domain.AlreadyExists, "label version %q already exists", v.ID)
	})
	if err != nil {
		return err
	}
	v.SequentialVersion = seq
	return nil
}

// GetLabelVersion returns version id of the account's label labelID.
// Codes: NOT_FOUND; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *LabelVersions) GetLabelVersion(ctx context.Context, accountID, labelID, id string) (*domain.LabelVersion, error) {
	var r labelVersionRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+labelVersionColumns+` FROM label_versions
		WHERE id = ? AND label_id = ? AND account_id = ?`), id, labelID, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "label version %q not found", id)
	}
	return r.toDomain()
}

// FindLabelVersion returns the account's version id, whatever its label.
// Codes: NOT_FOUND; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *LabelVersions) FindLabelVersion(ctx context.Context, accountID, id string) (*domain.LabelVersion, error) {
	var r labelVersionRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+labelVersionColumns+` FROM label_versions
		WHERE id = ? AND account_id = ?`), id, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "label version %q not found", id)
	}
	return r.toDomain()
}

// ListLabelVersions returns up to limit versions of the account's label in
// (sequentialVersion, id) ascending order, after the cursor when it is set;
// an empty slice when there are none. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *LabelVersions) ListLabelVersions(ctx context.Context, accountID, labelID string, after *domain.LabelVersionCursor, limit int) ([]*domain.LabelVersion, error) {
	query := `SELECT ` + labelVersionColumns + ` FROM label_versions WHERE label_id = ? AND account_id = ?`
	args := []any{labelID, accountID}
	if after != nil {
		query += ` AND (seq > ? OR (seq = ? AND id > ?))`
		args = append(args, after.Seq, after.Seq, after.ID)
	}
	query += ` ORDER BY seq, id LIMIT ?`
	args = append(args, limit)
	var rows []labelVersionRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(query), args...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.LabelVersion, len(rows))
	for i := range rows {
		v, err := rows[i].toDomain()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
