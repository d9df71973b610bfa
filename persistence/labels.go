package persistence

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// Labels implements domain.LabelStore.
type Labels struct {
	db *DB
}

var _ domain.LabelStore = (*Labels)(nil)

// NewLabels returns the label store on db.
func NewLabels(db *DB) *Labels { return &Labels{db: db} }

// labelRow is one row of labels.
type labelRow struct {
	ID          string     `db:"id"`
	AccountID   string     `db:"account_id"`
	Name        string     `db:"name"`
	PolicyID    string     `db:"policy_id"`
	Description string     `db:"description"`
	Disabled    bool       `db:"disabled"`
	Created     time.Time  `db:"created"`
	Updated     time.Time  `db:"updated"`
	ArchivedAt  *time.Time `db:"archived_at"`
	DeletedAt   *time.Time `db:"deleted_at"`
}

const labelColumns = `id, account_id, name, policy_id, description, disabled, created, updated, archived_at, deleted_at`

func (r *labelRow) toDomain() *domain.Label {
	return &domain.Label{
		ID:          r.ID,
		AccountID:   r.AccountID,
		Name:        r.Name,
		PolicyID:    r.PolicyID,
		Description: r.Description,
		Disabled:    r.Disabled,
		Created:     r.Created.UTC(),
		Updated:     r.Updated.UTC(),
		ArchivedAt:  utcPtr(r.ArchivedAt),
		DeletedAt:   utcPtr(r.DeletedAt),
		Tags:        []*domain.LabelTag{},
	}
}

func normalizeLabel(l *domain.Label) {
	l.Created = StoredTime(l.Created)
	l.Updated = StoredTime(l.Updated)
	l.ArchivedAt = storedTimePtr(l.ArchivedAt)
	l.DeletedAt = storedTimePtr(l.DeletedAt)
}

// labelNameTaken is the ALREADY_EXISTS of the partial unique index.
func labelNameTaken(err error, l *domain.Label) error {
	if l.PolicyID != "" {
		return describe(err, domain.AlreadyExists, "a label named %q already exists for policy %q", l.Name, l.PolicyID)
	}
	return describe(err, domain.AlreadyExists, "an independent label named %q already exists", l.Name)
}

// CreateLabel inserts l (the caller sets ID and times, normalized in place)
// with the tags tagIDs and fills l.Tags. Codes: ALREADY_EXISTS (the name is
// taken in its scope, or the id), NOT_FOUND (a tag that is not the
// account's); UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Labels) CreateLabel(ctx context.Context, l *domain.Label, tagIDs []string) error {
	normalizeLabel(l)
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO labels (`+labelColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			l.ID, l.AccountID, l.Name, l.PolicyID, l.Description, l.Disabled,
			l.Created, l.Updated, l.ArchivedAt, l.DeletedAt)
		if err != nil {
			return labelNameTaken(TranslateError(err), l)
		}
		if err := linkTags(ctx, tx, l.AccountID, l.ID, tagIDs); err != nil {
			return err
		}
		tags, err := loadLabelTags(ctx, tx, []string{l.ID})
		if err != nil {
			return err
		}
		l.Tags = tags[l.ID]
		return nil
	})
	return err
}

// linkTags checks that every tag is the account's and links it to the label.
func linkTags(ctx context.Context, tx *sqlx.Tx, accountID, labelID string, tagIDs []string) error {
	if len(tagIDs) == 0 {
		return nil
	}
	q, args, err := sqlx.In(`SELECT id FROM label_tags WHERE account_id = ? AND id IN (?)`, accountID, tagIDs)
	if err != nil {
		return err
	}
	var found []string
	if err := tx.SelectContext(ctx, &found, tx.Rebind(q), args...); err != nil {
		return TranslateError(err)
	}
	for _, id := range tagIDs {
		if !containsString(found, id) {
			return domain.Errorf(domain.NotFound, "label tag %q not found", id)
		}
	}
	for _, id := range tagIDs {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO label_tag_links (label_id, tag_id) VALUES (?, ?)`), labelID, id); err != nil {
			return TranslateError(err)
		}
	}
	return nil
}

func containsString(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// loadLabelTags returns the tags of each label, ordered by name then id;
// every label id maps to a non-nil slice.
func loadLabelTags(ctx context.Context, q sqlx.ExtContext, labelIDs []string) (map[string][]*domain.LabelTag, error) {
	out := make(map[string][]*domain.LabelTag, len(labelIDs))
	for _, id := range labelIDs {
		out[id] = []*domain.LabelTag{}
	}
	if len(labelIDs) == 0 {
		return out, nil
	}
	query, args, err := sqlx.In(`
		SELECT k.label_id, `+prefixed("t.", labelTagColumns)+`
		FROM label_tag_links k JOIN label_tags t ON t.id = k.tag_id
		WHERE k.label_id IN (?)
		ORDER BY t.name, t.id`, labelIDs)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		LabelID string `db:"label_id"`
		labelTagRow
	}
	if err := sqlx.SelectContext(ctx, q, &rows, q.Rebind(query), args...); err != nil {
		return nil, TranslateError(err)
	}
	for i := range rows {
		out[rows[i].LabelID] = append(out[rows[i].LabelID], rows[i].labelTagRow.toDomain())
	}
	return out, nil
}

// prefixed qualifies every column of a column list with p ("t.").
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// getLabel reads a label that is not deleted, locking it when lock is set.
func (s *Labels) getLabel(ctx context.Context, q sqlx.ExtContext, accountID, id string, lock bool) (*domain.Label, error) {
	suffix := ""
	if lock {
		suffix = s.db.forUpdate()
	}
	var r labelRow
	err := sqlx.GetContext(ctx, q, &r, q.Rebind(`SELECT `+labelColumns+` FROM labels
		WHERE id = ? AND account_id = ? AND deleted_at IS NULL`+suffix), id, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "label %q not found", id)
	}
	l := r.toDomain()
	tags, err := loadLabelTags(ctx, q, []string{l.ID})
	if err != nil {
		return nil, err
	}
	l.Tags = tags[l.ID]
	return l, nil
}

// GetLabel returns a label of the account that is not deleted, with its
// tags. Codes: NOT_FOUND; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Labels) GetLabel(ctx context.Context, accountID, id string) (*domain.Label, error) {
	return s.getLabel(ctx, s.db.DB, accountID, id, false)
}

// ListLabels returns one page of the account's labels that are not deleted,
// newest first (created, then id, descending), with their tags; an empty
// slice when there are none. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Labels) ListLabels(ctx context.Context, q domain.LabelQuery) ([]*domain.Label, error) {
	var b strings.Builder
	args := []any{q.AccountID}
	b.WriteString(`SELECT ` + labelColumns + ` FROM labels WHERE account_id = ? AND deleted_at IS NULL`)
	if !q.IncludeArchived {
		b.WriteString(` AND archived_at IS NULL`)
	}
	if q.After != nil {
		c := StoredTime(q.After.Created)
		b.WriteString(` AND (created < ? OR (created = ? AND id < ?))`)
		args = append(args, c, c, q.After.ID)
	}
	if len(q.TagIDs) > 0 {
		b.WriteString(` AND EXISTS (SELECT 1 FROM label_tag_links k WHERE k.label_id = labels.id AND k.tag_id IN (?))`)
		args = append(args, q.TagIDs)
	}
	b.WriteString(` ORDER BY created DESC, id DESC LIMIT ?`)
	args = append(args, q.Limit)
	query, args, err := sqlx.In(b.String(), args...)
	if err != nil {
		return nil, err
	}
	var rows []labelRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(query), args...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.Label, len(rows))
	ids := make([]string, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
		ids[i] = rows[i].ID
	}
	tags, err := loadLabelTags(ctx, s.db.DB, ids)
	if err != nil {
		return nil, err
	}
	for _, l := range out {
		l.Tags = tags[l.ID]
	}
	return out, nil
}

// UpdateLabel loads the label (locked on PostgreSQL; SQLite's write
// transaction excludes other writers), applies fn and saves name,
// description, disabled, archived_at and updated. Changes fn makes to other
// fields are ignored. Codes: NOT_FOUND, ALREADY_EXISTS (renamed onto a
// taken name), whatever fn returns; ABORTED, UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Labels) UpdateLabel(ctx context.Context, accountID, id string, fn func(*domain.Label) error) (*domain.Label, error) {
	var out *domain.Label
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		l, err := s.getLabel(ctx, tx, accountID, id, true)
		if err != nil {
			return err
		}
		orig := *l
		if err := fn(l); err != nil {
			return err
		}
		l.ID, l.AccountID, l.PolicyID, l.Created, l.DeletedAt, l.Tags = orig.ID, orig.AccountID, orig.PolicyID, orig.Created, orig.DeletedAt, orig.Tags
		normalizeLabel(l)
		_, err = tx.ExecContext(ctx, tx.Rebind(`
			UPDATE labels SET name = ?, description = ?, disabled = ?, archived_at = ?, updated = ?
			WHERE id = ? AND account_id = ?`),
			l.Name, l.Description, l.Disabled, l.ArchivedAt, l.Updated, id, accountID)
		if err != nil {
			return labelNameTaken(TranslateError(err), l)
		}
		out = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteLabel soft-deletes (sets deleted_at on) a label that has no version,
// counting every version row (versions are never removed). The label row is
// locked first, so a version created concurrently either commits before
// (and the delete fails) or finds the label deleted. Codes: NOT_FOUND,
// FAILED_PRECONDITION; ABORTED, UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Labels) DeleteLabel(ctx context.Context, accountID, id string, at time.Time) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.getLabel(ctx, tx, accountID, id, true); err != nil {
			return err
		}
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM label_versions WHERE label_id = ?`), id); err != nil {
			return TranslateError(err)
		}
		if n > 0 {
			return domain.Errorf(domain.FailedPrecondition,
				"label %q has %d version(s) and cannot be deleted; archive it instead", id, n)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE labels SET deleted_at = ?, updated = ? WHERE id = ? AND account_id = ?`),
			StoredTime(at), StoredTime(at), id, accountID)
		return TranslateError(err)
	})
}

// SetLabelTags replaces the label's tags and sets updated to at. Codes:
// NOT_FOUND (label, or a tag that is not the account's); ABORTED,
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Labels) SetLabelTags(ctx context.Context, accountID, id string, tagIDs []string, at time.Time) (*domain.Label, error) {
	var out *domain.Label
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.getLabel(ctx, tx, accountID, id, true); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM label_tag_links WHERE label_id = ?`), id); err != nil {
			return TranslateError(err)
		}
		if err := linkTags(ctx, tx, accountID, id, tagIDs); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE labels SET updated = ? WHERE id = ?`), StoredTime(at), id); err != nil {
			return TranslateError(err)
		}
		l, err := s.getLabel(ctx, tx, accountID, id, false)
		out = l
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
