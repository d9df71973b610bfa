package persistence

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// Keys implements domain.KeyStore.
type Keys struct {
	db *DB
}

var _ domain.KeyStore = (*Keys)(nil)

// NewKeys returns the API key store on db.
func NewKeys(db *DB) *Keys { return &Keys{db: db} }

// keyRow is one row of api_keys.
type keyRow struct {
	ID        string     `db:"id"`
	AccountID string     `db:"account_id"`
	Name      string     `db:"name"`
	Role      string     `db:"role"`
	Created   time.Time  `db:"created"`
	ExpiresAt *time.Time `db:"expires_at"`
	RevokedAt *time.Time `db:"revoked_at"`
}

const keyColumns = `id, account_id, name, role, created, expires_at, revoked_at`

func (r *keyRow) toDomain() *domain.APIKey {
	return &domain.APIKey{
		ID:        r.ID,
		AccountID: r.AccountID,
		Name:      r.Name,
		Role:      domain.KeyRole(r.Role),
		Created:   r.Created.UTC(),
		ExpiresAt: utcPtr(r.ExpiresAt),
		RevokedAt: utcPtr(r.RevokedAt),
	}
}

// CreateKey inserts k as given (the caller sets ID and Created); k's times
// are normalized in place to UTC microseconds. Codes: NOT_FOUND when the
// account does not exist; ALREADY_EXISTS when the key id is taken;
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Keys) CreateKey(ctx context.Context, k *domain.APIKey) error {
	k.Created = StoredTime(k.Created)
	k.ExpiresAt = storedTimePtr(k.ExpiresAt)
	k.RevokedAt = storedTimePtr(k.RevokedAt)
	if k.Role == "" {
		k.Role = domain.RoleAdmin
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO api_keys (`+keyColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?)`),
			k.ID, k.AccountID, k.Name, string(k.Role), k.Created, k.ExpiresAt, k.RevokedAt)
		return err
	})
	// The only foreign key of api_keys is account_id.
	err = describe(err, domain.NotFound, "account %q not found", k.AccountID)
	return describe(err, domain.AlreadyExists, "API key %q already exists", k.ID)
}

// GetKey returns one key. Codes: NOT_FOUND; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Keys) GetKey(ctx context.Context, id string) (*domain.APIKey, error) {
	var r keyRow
	err := s.db.getPrepared(ctx, &r, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "API key %q not found", id)
	}
	return r.toDomain(), nil
}

// ListKeys returns an account's keys, oldest first (ties by id), revoked and
// expired ones included; an empty slice, not nil, when there are none,
// including for an unknown account (callers that must tell the two apart call
// GetAccount). Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Keys) ListKeys(ctx context.Context, accountID string) ([]*domain.APIKey, error) {
	var rows []keyRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT `+keyColumns+` FROM api_keys WHERE account_id = ? ORDER BY created, id`), accountID)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.APIKey, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// RevokeKey marks a key revoked at t (normalized to UTC microseconds) and
// returns it. Revoking twice keeps the first time: the update is guarded by
// revoked_at IS NULL, so of two racing revocations exactly one takes effect.
// Codes: NOT_FOUND; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Keys) RevokeKey(ctx context.Context, id string, t time.Time) (*domain.APIKey, error) {
	var r keyRow
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
			StoredTime(t), id)
		if err != nil {
			return err
		}
		return tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+keyColumns+` FROM api_keys WHERE id = ?`), id)
	})
	if err != nil {
		return nil, describe(err, domain.NotFound, "API key %q not found", id)
	}
	return r.toDomain(), nil
}
