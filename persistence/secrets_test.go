package persistence_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func newServerKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return k
}

// rawSecret reads the webhook_secret column as stored.
func rawSecret(t *testing.T, db *persistence.DB, id string) string {
	t.Helper()
	var s string
	require.NoError(t, db.GetContext(t.Context(), &s, db.Rebind(`SELECT webhook_secret FROM accounts WHERE id = ?`), id))
	return s
}

// Webhook secrets are stored sealed; every read returns the plaintext.
func TestAccounts_WebhookSecretSealed(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		require.NoError(t, db.EncryptSecretsWith(newServerKey(t)))
		s := persistence.NewAccounts(db)
		a := newAccount("a1", t0)
		a.WebhookSecret = "whsec_dGhpcyBpcyB0aGUgcGxhaW50ZXh0IHNlY3JldA=="
		require.NoError(t, s.CreateAccount(ctx, a))
		noSecret := newAccount("a2", t0)
		noSecret.WebhookSecret = ""
		require.NoError(t, s.CreateAccount(ctx, noSecret))

		raw := rawSecret(t, db, "a1")
		require.True(t, strings.HasPrefix(raw, "v1:"), raw)
		require.NotContains(t, raw, "dGhpcyBpcyB0aGUgcGxhaW50ZXh0IHNlY3JldA")
		require.Empty(t, rawSecret(t, db, "a2"), "no secret stays no secret")

		got, err := s.GetAccount(ctx, "a1")
		require.NoError(t, err)
		require.Equal(t, a.WebhookSecret, got.WebhookSecret)
		list, err := s.ListAccounts(ctx)
		require.NoError(t, err)
		require.Equal(t, a.WebhookSecret, list[0].WebhookSecret)

		updated, err := s.UpdateAccount(ctx, "a1", func(a *domain.Account) error { a.Name = "renamed"; return nil })
		require.NoError(t, err)
		require.Equal(t, a.WebhookSecret, updated.WebhookSecret)
		require.NotEqual(t, raw, rawSecret(t, db, "a1"), "a fresh nonce per write")
		require.True(t, strings.HasPrefix(rawSecret(t, db, "a1"), "v1:"))
	})
}

// A sealed secret opens only for its own account and under its own key.
func TestAccounts_WebhookSecretBoundToAccountAndKey(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		key := newServerKey(t)
		require.NoError(t, db.EncryptSecretsWith(key))
		s := persistence.NewAccounts(db)
		require.NoError(t, s.CreateAccount(ctx, newAccount("a1", t0)))
		require.NoError(t, s.CreateAccount(ctx, newAccount("a2", t0)))

		// a2 gets a1's sealed value: the account id is the additional data.
		_, err := db.ExecContext(ctx, db.Rebind(`UPDATE accounts SET webhook_secret = ? WHERE id = ?`), rawSecret(t, db, "a1"), "a2")
		require.NoError(t, err)
		_, err = s.GetAccount(ctx, "a2")
		requireCode(t, err, domain.Internal)
		require.Contains(t, domain.ErrorMessage(err), `account "a2" cannot be read with this server key`)
		_, err = s.ListAccounts(ctx)
		requireCode(t, err, domain.Internal)
		_, err = s.UpdateAccount(ctx, "a2", func(*domain.Account) error { return nil })
		requireCode(t, err, domain.Internal)

		tampered := []byte(rawSecret(t, db, "a1"))
		tampered[len(tampered)-2] ^= 1
		_, err = db.ExecContext(ctx, db.Rebind(`UPDATE accounts SET webhook_secret = ? WHERE id = ?`), string(tampered), "a2")
		require.NoError(t, err)
		_, err = s.GetAccount(ctx, "a2")
		requireCode(t, err, domain.Internal)

		// The same rows under another server key do not open.
		require.NoError(t, db.EncryptSecretsWith(newServerKey(t)))
		_, err = s.GetAccount(ctx, "a1")
		requireCode(t, err, domain.Internal)
		require.NoError(t, db.EncryptSecretsWith(key))
		got, err := s.GetAccount(ctx, "a1")
		require.NoError(t, err)
		require.Equal(t, "whsec_a1", got.WebhookSecret)
	})
}

// Rows written in plaintext (before sealing) read as they are, and
// SealWebhookSecrets seals them, once.
func TestAccounts_SealWebhookSecrets(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		s := persistence.NewAccounts(db)
		_, err := s.SealWebhookSecrets(ctx)
		requireCode(t, err, domain.FailedPrecondition)
		// No key yet: what an earlier version wrote.
		for _, id := range []string{"a1", "a2", "a3"} {
			a := newAccount(id, t0)
			if id == "a3" {
				a.WebhookSecret = ""
			}
			require.NoError(t, s.CreateAccount(ctx, a))
		}
		require.Equal(t, "whsec_a1", rawSecret(t, db, "a1"))

		require.NoError(t, db.EncryptSecretsWith(newServerKey(t)))
		got, err := s.GetAccount(ctx, "a1")
		require.NoError(t, err)
		require.Equal(t, "whsec_a1", got.WebhookSecret, "a plaintext row reads as it is")
		require.NoError(t, s.CreateAccount(ctx, newAccount("a4", t0)))
		sealedBefore := rawSecret(t, db, "a4")

		n, err := s.SealWebhookSecrets(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		for _, id := range []string{"a1", "a2"} {
			raw := rawSecret(t, db, id)
			require.True(t, strings.HasPrefix(raw, "v1:"), raw)
			require.NotContains(t, raw, "whsec_")
			got, err := s.GetAccount(ctx, id)
			require.NoError(t, err)
			require.Equal(t, "whsec_"+id, got.WebhookSecret)
		}
		require.Empty(t, rawSecret(t, db, "a3"))
		require.Equal(t, sealedBefore, rawSecret(t, db, "a4"), "sealed rows are left alone")

		n, err = s.SealWebhookSecrets(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "idempotent")
	})
}

// Without a key a sealed secret cannot be read (rather than being taken for
// the secret itself).
func TestAccounts_SealedSecretWithoutKey(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.SQLite)
	require.NoError(t, db.EncryptSecretsWith(newServerKey(t)))
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(t.Context(), newAccount("a1", t0)))

	other, err := persistence.Open(t.Context(), "sqlite:"+sqlitePath(t, db))
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	_, err = persistence.NewAccounts(other).GetAccount(t.Context(), "a1")
	requireCode(t, err, domain.Internal)
}

// sqlitePath is the file of a SQLite database.
func sqlitePath(t *testing.T, db *persistence.DB) string {
	t.Helper()
	var path string
	require.NoError(t, db.GetContext(t.Context(), &path, `SELECT file FROM pragma_database_list WHERE name = 'main'`))
	return path
}

func TestEncryptSecretsWith_RejectsBadKey(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.SQLite)
	require.Error(t, db.EncryptSecretsWith(ed25519.PrivateKey("short")))
}
