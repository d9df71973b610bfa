package persistence

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// LabelTags implements domain.LabelTagStore.
type LabelTags struct {
	db *DB
}

var _ domain.LabelTagStore = (*LabelTags)(nil)

// NewLabelTags returns the label tag store on db.
func NewLabelTags(db *DB) *LabelTags { return &LabelTags{db: db} }

// labelTagRow is one row of label_tags.
type labelTagRow struct {
	ID        string    `db:"id"`
	AccountID string    `db:"account_id"`
	Name      string    `db:"name"`
	Color     string    `db:"color"`
	Created   time.Time `db:"created"`
	Updated   time.Time `db:"updated"`
}

const labelTagColumns = `id, account_id, name, color, created, updated`

func (r *labelTagRow) toDomain() *domain.LabelTag {
	return &domain.LabelTag{
		ID: r.ID, AccountID: r.AccountID, Name: r.Name, Color: r.Color,
		Created: r.Created.UTC(), Updated: r.Updated.UTC(),
	}
}

// CreateLabelTag inserts t (the caller sets ID and times, normalized in
// place) unless the account already has max tags; the account row is locked
// on PostgreSQL so concurrent creations cannot pass the bound together.
// Codes: ALREADY_EXISTS (the name is taken in the account), NOT_FOUND (no
// such account), FAILED_PRECONDITION (max tags); ABORTED, UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *LabelTags) CreateLabelTag(ctx context.Context, t *domain.LabelTag, max int) error {
	t.Created = StoredTime(t.Created)
	t.Updated = StoredTime(t.Updated)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var id string
		if err := tx.GetContext(ctx, &id, tx.Rebind(`SELECT id FROM accounts WHERE id = ?`+s.db.forUpdate()), t.AccountID); err != nil {
			return describe(TranslateError(err), domain.NotFound, "account %q not found", t.AccountID)
		}
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM label_tags WHERE account_id = ?`), t.AccountID); err != nil {
			return TranslateError(err)
		}
		if n >= max {
			return domain.Errorf(domain.FailedPrecondition, "the account already has %d label tags, the most allowed", n)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO label_tags (`+labelTagColumns+`) VALUES (?, ?, ?, ?, ?, ?)`),
			t.ID, t.AccountID, t.Name, t.Color, t.Created, t.Updated)
		return describe(TranslateError(err), domain.AlreadyExists, "a label tag named %q already exists", t.Name)
	})
}

// ListLabelTags returns every tag of the account ordered by name, then id;
// an empty slice when there are none. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *LabelTags) ListLabelTags(ctx context.Context, accountID string) ([]*domain.LabelTag, error) {
	var rows []labelTagRow
	err := s.db.selectPrepared(ctx, &rows, `SELECT `+labelTagColumns+` FROM label_tags
		WHERE account_id = ? ORDER BY name, id`, accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.LabelTag, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}
