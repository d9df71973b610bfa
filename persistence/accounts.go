package persistence

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// Accounts implements domain.AccountStore.
type Accounts struct {
	db *DB
}

var _ domain.AccountStore = (*Accounts)(nil)

// NewAccounts returns the account store on db.
func NewAccounts(db *DB) *Accounts { return &Accounts{db: db} }

// accountRow is one row of accounts.
type accountRow struct {
	ID                string    `db:"id"`
	Name              string    `db:"name"`
	Type              string    `db:"type"`
	RPS               float64   `db:"rps"`
	Burst             int       `db:"burst"`
	EvaluationsPerDay int64     `db:"evaluations_per_day"`
	WebhookSecret     string    `db:"webhook_secret"`
	RetentionSeconds  int64     `db:"retention_seconds"`
	ModerationPolicy  string    `db:"moderation_policy_key"`
	ModerationTag     string    `db:"moderation_tag"`
	Created           time.Time `db:"created"`
	Updated           time.Time `db:"updated"`
}

const accountColumns = `id, name, type, rps, burst, evaluations_per_day, webhook_secret, retention_seconds, moderation_policy_key, moderation_tag, created, updated`

// toDomain returns the account of r with its webhook secret opened. Codes:
// INTERNAL when the secret does not open (the server key was replaced, or
// the row altered).
func (s *Accounts) toDomain(r *accountRow) (*domain.Account, error) {
	secret, err := s.db.secrets.open(r.ID, r.WebhookSecret)
	if err != nil {
		return nil, &dbError{err: domain.Errorf(domain.Internal,
			"the webhook secret of account %q cannot be read with this server key", r.ID), cause: err}
	}
	return &domain.Account{
		ID:   r.ID,
		Name: r.Name,
		Type: domain.AccountType(r.Type),
		Limits: domain.Limits{
			RequestsPerSecond: r.RPS,
			Burst:             r.Burst,
			EvaluationsPerDay: r.EvaluationsPerDay,
		},
		WebhookSecret: secret,
		Retention:     time.Duration(r.RetentionSeconds) * time.Second,
		Moderation:    domain.ModerationDefaults{PolicyKey: r.ModerationPolicy, Tag: r.ModerationTag},
		Created:       r.Created.UTC(),
		Updated:       r.Updated.UTC(),
	}, nil
}

// retentionSeconds is d as stored: whole seconds, at least one for a
// positive d (a retention shorter than a second is one second, not none).
func retentionSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return max(1, int64(d/time.Second))
}

// normalizeAccount makes a's times what the database will store, so the
// caller's struct equals what GetAccount returns afterwards.
func normalizeAccount(a *domain.Account) {
	a.Created = StoredTime(a.Created)
	a.Updated = StoredTime(a.Updated)
	a.Retention = time.Duration(retentionSeconds(a.Retention)) * time.Second
}

// CreateAccount inserts a as given (the caller sets ID and times); a's times
// are normalized in place to UTC microseconds. The webhook secret is stored
// sealed (EncryptSecretsWith). Codes: ALREADY_EXISTS when the id is taken;
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Accounts) CreateAccount(ctx context.Context, a *domain.Account) error {
	normalizeAccount(a)
	secret, err := s.db.secrets.seal(a.ID, a.WebhookSecret)
	if err != nil {
		return err
	}
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO accounts (`+accountColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			a.ID, a.Name, string(a.Type), a.Limits.RequestsPerSecond, a.Limits.Burst,
			a.Limits.EvaluationsPerDay, secret, retentionSeconds(a.Retention),
			a.Moderation.PolicyKey, a.Moderation.Tag, a.Created, a.Updated)
		return err
	})
	return describe(err, domain.AlreadyExists, "account %q already exists", a.ID)
}

// GetAccount returns one account. Codes: NOT_FOUND; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Accounts) GetAccount(ctx context.Context, id string) (*domain.Account, error) {
	var r accountRow
	err := s.db.getPrepared(ctx, &r, `SELECT `+accountColumns+` FROM accounts WHERE id = ?`, id)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "account %q not found", id)
	}
	return s.toDomain(&r)
}

// ListAccounts returns every account, oldest first (ties by id); an empty
// slice, not nil, when there are none. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Accounts) ListAccounts(ctx context.Context) ([]*domain.Account, error) {
	var rows []accountRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+accountColumns+` FROM accounts ORDER BY created, id`); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.Account, len(rows))
	for i := range rows {
		a, err := s.toDomain(&rows[i])
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// UpdateAccount loads the account, applies fn and saves the result in one
// transaction: on PostgreSQL the row is locked (SELECT ... FOR UPDATE), on
// SQLite the transaction holds the write lock, so concurrent updates never
// lose each other's changes. fn sets Updated itself (the store has no clock);
// changes fn makes to ID and Created are ignored. When fn returns an error
// nothing is saved and that error is returned unchanged. Codes: NOT_FOUND;
// whatever fn returns; ABORTED, UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Accounts) UpdateAccount(ctx context.Context, id string, fn func(*domain.Account) error) (*domain.Account, error) {
	var a *domain.Account
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var r accountRow
		err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+accountColumns+` FROM accounts WHERE id = ?`+s.db.forUpdate()), id)
		if err != nil {
			return describe(TranslateError(err), domain.NotFound, "account %q not found", id)
		}
		if a, err = s.toDomain(&r); err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
		a.ID, a.Created = r.ID, r.Created.UTC()
		normalizeAccount(a)
		secret, err := s.db.secrets.seal(a.ID, a.WebhookSecret)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, tx.Rebind(`
			UPDATE accounts
			SET name = ?, type = ?, rps = ?, burst = ?, evaluations_per_day = ?,
			    webhook_secret = ?, retention_seconds = ?, moderation_policy_key = ?,
			    moderation_tag = ?, updated = ?
			WHERE id = ?`),
			a.Name, string(a.Type), a.Limits.RequestsPerSecond, a.Limits.Burst,
			a.Limits.EvaluationsPerDay, secret, retentionSeconds(a.Retention),
			a.Moderation.PolicyKey, a.Moderation.Tag, a.Updated, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// CountAccounts returns how many accounts exist. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Accounts) CountAccounts(ctx context.Context) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM accounts`); err != nil {
		return 0, TranslateError(err)
	}
	return n, nil
}

// SealWebhookSecrets seals the webhook secrets stored in plaintext (rows
// written before secrets were sealed, or without EncryptSecretsWith) and
// returns how many it sealed. It runs in one transaction and skips sealed
// rows, so running it again, or on several replicas at once, is harmless.
// A migration cannot do it: the key is not in the database. Codes:
// FAILED_PRECONDITION (no key given); UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Accounts) SealWebhookSecrets(ctx context.Context) (int, error) {
	if s.db.secrets == nil {
		return 0, domain.Errorf(domain.FailedPrecondition, "no server key to seal webhook secrets with")
	}
	n := 0
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var rows []struct {
			ID     string `db:"id"`
			Secret string `db:"webhook_secret"`
		}
		// The prefix test is spelled with substr: LIKE would treat '_' in
		// a pattern as a wildcard, and the rows are few.
		err := tx.SelectContext(ctx, &rows, tx.Rebind(`
			SELECT id, webhook_secret FROM accounts
			WHERE webhook_secret <> '' AND substr(webhook_secret, 1, ?) <> ?`+s.db.forUpdate()),
			len(sealedPrefix), sealedPrefix)
		if err != nil {
			return err
		}
		for _, r := range rows {
			sealed, err := s.db.secrets.seal(r.ID, r.Secret)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE accounts SET webhook_secret = ? WHERE id = ?`), sealed, r.ID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
