package persistence

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// Policies implements domain.PolicyStore.
type Policies struct {
	db *DB
}

var _ domain.PolicyStore = (*Policies)(nil)

// NewPolicies returns the policy store on db.
func NewPolicies(db *DB) *Policies { return &Policies{db: db} }

type policyRow struct {
	ID              string    `db:"id"`
	AccountID       string    `db:"account_id"`
	Key             string    `db:"policy_key"`
	ActiveVersionID string    `db:"active_version_id"`
	Disabled        bool      `db:"disabled"`
	Created         time.Time `db:"created"`
	Updated         time.Time `db:"updated"`
	ShadowVersionID string    `db:"shadow_version_id"`
	ShadowRate      float64   `db:"shadow_sample_rate"`
}

const policyColumns = `id, account_id, policy_key, active_version_id, disabled, created, updated, shadow_version_id, shadow_sample_rate`

func (r *policyRow) toDomain() *domain.Policy {
	return &domain.Policy{
		ID: r.ID, AccountID: r.AccountID, Key: r.Key, ActiveVersionID: r.ActiveVersionID,
		ShadowVersionID: r.ShadowVersionID, ShadowSampleRate: r.ShadowRate,
		Disabled: r.Disabled, Created: r.Created.UTC(), Updated: r.Updated.UTC(),
	}
}

type policyVersionRow struct {
	ID                   string    `db:"id"`
	PolicyID             string    `db:"policy_id"`
	Seq                  int       `db:"seq"`
	Text                 string    `db:"text"`
	DSLTokens            int       `db:"dsl_tokens"`
	SignalTokens         int       `db:"signal_tokens"`
	SignalSpecialTokens  int       `db:"signal_special_tokens"`
	ContentSpecialTokens int       `db:"content_special_tokens"`
	ComplexityScore      float64   `db:"complexity_score"`
	Created              time.Time `db:"created"`
}

const policyVersionColumns = `id, policy_id, seq, text, dsl_tokens, signal_tokens, signal_special_tokens, content_special_tokens, complexity_score, created`

func (r *policyVersionRow) toDomain() *domain.PolicyVersion {
	return &domain.PolicyVersion{
		ID: r.ID, PolicyID: r.PolicyID, Seq: r.Seq, Text: r.Text,
		TokenCounts: rules.TokenCounts{
			DSLTokenCount: r.DSLTokens, SignalTokens: r.SignalTokens,
			SignalSpecialTokens: r.SignalSpecialTokens, ContentSpecialTokens: r.ContentSpecialTokens,
		},
		ComplexityScore: r.ComplexityScore, Created: r.Created.UTC(),
	}
}

func insertPolicyVersion(ctx context.Context, tx *sqlx.Tx, v *domain.PolicyVersion) error {
	_, err := tx.ExecContext(ctx, tx.Rebind(`
		INSERT INTO policy_versions (`+policyVersionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		v.ID, v.PolicyID, v.Seq, v.Text, v.TokenCounts.DSLTokenCount, v.TokenCounts.SignalTokens,
		v.TokenCounts.SignalSpecialTokens, v.TokenCounts.ContentSpecialTokens, v.ComplexityScore, v.Created)
	return err
}

// CreatePolicy inserts p and its first version v (times normalized in
// place). Codes: ALREADY_EXISTS when the account already has p.Key;
// NOT_FOUND when the account does not exist; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Policies) CreatePolicy(ctx context.Context, p *domain.Policy, v *domain.PolicyVersion) error {
	p.Created, p.Updated, v.Created = StoredTime(p.Created), StoredTime(p.Updated), StoredTime(v.Created)
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO policies (`+policyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			p.ID, p.AccountID, p.Key, p.ActiveVersionID, p.Disabled, p.Created, p.Updated, p.ShadowVersionID, max(p.ShadowSampleRate, 0)); err != nil {
			return err
		}
		return insertPolicyVersion(ctx, tx, v)
	})
	err = describe(err, domain.AlreadyExists, "policy key %q already exists", p.Key)
	return describe(err, domain.NotFound, "account %q not found", p.AccountID)
}

// GetPolicy returns a policy of the account. Codes: NOT_FOUND; UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) GetPolicy(ctx context.Context, accountID, id string) (*domain.Policy, error) {
	var r policyRow
	// Read for every job submitted: through the statement cache.
	err := s.db.getPrepared(ctx, &r, `SELECT `+policyColumns+` FROM policies WHERE id = ? AND account_id = ?`, id, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "policy %q not found", id)
	}
	return r.toDomain(), nil
}

// GetPolicyByKey returns the account's policy with that key (unique per
// account). Codes: NOT_FOUND; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) GetPolicyByKey(ctx context.Context, accountID, key string) (*domain.Policy, error) {
	var r policyRow
	err := s.db.getPrepared(ctx, &r, `SELECT `+policyColumns+` FROM policies WHERE account_id = ? AND policy_key = ?`, accountID, key)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "policy key %q not found", key)
	}
	return r.toDomain(), nil
}

// ListPolicies returns up to limit policies of the account, newest first.
// Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) ListPolicies(ctx context.Context, accountID string, after *domain.PolicyCursor, limit int) ([]*domain.Policy, error) {
	q := `SELECT ` + policyColumns + ` FROM policies WHERE account_id = ?`
	args := []any{accountID}
	if after != nil {
		q += ` AND (created < ? OR (created = ? AND id < ?))`
		c := StoredTime(after.Created)
		args = append(args, c, c, after.ID)
	}
	q += ` ORDER BY created DESC, id DESC LIMIT ?`
	args = append(args, limit)
	var rows []policyRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.Policy, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// AddPolicyVersion appends v with the next sequential number and gives it
// the role v.Mode (domain.PolicyStore). The policy row is locked
// (PostgreSQL) or the database write lock held (SQLite), so concurrent
// additions get distinct numbers. Codes: NOT_FOUND; ABORTED, UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) AddPolicyVersion(ctx context.Context, accountID string, v *domain.PolicyVersion) error {
	v.Created = StoredTime(v.Created)
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var r policyRow
		if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+policyColumns+` FROM policies WHERE id = ? AND account_id = ?`+s.db.forUpdate()), v.PolicyID, accountID); err != nil {
			return describe(TranslateError(err), domain.NotFound, "policy %q not found", v.PolicyID)
		}
		if err := tx.GetContext(ctx, &v.Seq, tx.Rebind(`SELECT COALESCE(MAX(seq), 0) + 1 FROM policy_versions WHERE policy_id = ?`), v.PolicyID); err != nil {
			return err
		}
		if err := insertPolicyVersion(ctx, tx, v); err != nil {
			return err
		}
		var err error
		switch v.Mode {
		case domain.PolicyVersionShadow:
			_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE policies SET shadow_version_id = ?, shadow_sample_rate = ?, updated = ? WHERE id = ?`),
				v.ID, v.ShadowSampleRate, v.Created, v.PolicyID)
		case domain.PolicyVersionDraft:
			_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE policies SET updated = ? WHERE id = ?`), v.Created, v.PolicyID)
		default:
			_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE policies SET active_version_id = ?, updated = ? WHERE id = ?`), v.ID, v.Created, v.PolicyID)
		}
		return err
	})
	return err
}

// ActivatePolicyVersion makes a version active, ending its shadowing if it
// was the shadow (domain.PolicyStore). Codes: NOT_FOUND; UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) ActivatePolicyVersion(ctx context.Context, accountID, policyID, versionID string, now time.Time) (*domain.Policy, error) {
	var r policyRow
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+policyColumns+` FROM policies WHERE id = ? AND account_id = ?`+s.db.forUpdate()), policyID, accountID); err != nil {
			return describe(TranslateError(err), domain.NotFound, "policy %q not found", policyID)
		}
		var id string
		if err := tx.GetContext(ctx, &id, tx.Rebind(`SELECT id FROM policy_versions WHERE id = ? AND policy_id = ?`), versionID, policyID); err != nil {
			return describe(TranslateError(err), domain.NotFound, "policy version %q of policy %q not found", versionID, policyID)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE policies SET active_version_id = ?,
			shadow_version_id = CASE WHEN shadow_version_id = ? THEN '' ELSE shadow_version_id END, updated = ?
			WHERE id = ?`), versionID, versionID, StoredTime(now), policyID); err != nil {
			return err
		}
		return tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+policyColumns+` FROM policies WHERE id = ?`), policyID)
	})
	if err != nil {
		return nil, err
	}
	return r.toDomain(), nil
}

// GetPolicyVersion returns one version. Codes: NOT_FOUND; UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) GetPolicyVersion(ctx context.Context, policyID, versionID string) (*domain.PolicyVersion, error) {
	var r policyVersionRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+policyVersionColumns+` FROM policy_versions WHERE id = ? AND policy_id = ?`), versionID, policyID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "policy version %q not found", versionID)
	}
	return r.toDomain(), nil
}

// ListPolicyVersions returns up to limit versions after afterSeq, oldest
// first. Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) ListPolicyVersions(ctx context.Context, policyID string, afterSeq, limit int) ([]*domain.PolicyVersion, error) {
	var rows []policyVersionRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT `+policyVersionColumns+` FROM policy_versions
		WHERE policy_id = ? AND seq > ? ORDER BY seq LIMIT ?`), policyID, afterSeq, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.PolicyVersion, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// SetPolicyDisabled sets a policy's disabled flag. Codes: NOT_FOUND;
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Policies) SetPolicyDisabled(ctx context.Context, accountID, id string, disabled bool, now time.Time) (*domain.Policy, error) {
	var r policyRow
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE policies SET disabled = ?, updated = ? WHERE id = ? AND account_id = ?`),
			disabled, StoredTime(now), id, accountID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return domain.Errorf(domain.NotFound, "policy %q not found", id)
		}
		return tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+policyColumns+` FROM policies WHERE id = ?`), id)
	})
	if err != nil {
		return nil, err
	}
	return r.toDomain(), nil
}
