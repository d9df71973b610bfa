package access_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// The key cache on the real stores: within its TTL a key and its account
// are reused, changes made through this service apply at once and only to
// their own account, changes made elsewhere apply once the TTL has passed.
func TestKeys_Cache(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		clock := &fixedClock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
		accounts := persistence.NewAccounts(db)
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		keys := access.NewKeyService(persistence.NewKeys(db), accounts, priv, clock, 5*time.Second)
		// Another replica: same stores and signing key, a cache of its own.
		replica := access.NewKeyService(persistence.NewKeys(db), accounts, priv, clock, 5*time.Second)

		tokens := map[string]string{}
		for _, name := range []string{"a", "b"} {
			acct := &domain.Account{ID: domain.NewID(), Name: name, Type: domain.AccountLabelFirst, WebhookSecret: "whsec_x",
				Created: clock.t, Updated: clock.t}
			require.NoError(t, accounts.CreateAccount(ctx, acct))
			_, token, err := keys.Issue(ctx, acct.ID, name, time.Hour)
			require.NoError(t, err)
			tokens[acct.ID] = token
		}
		authenticate := func(id string) *domain.Account {
			t.Helper()
			got, err := keys.Authenticate(ctx, tokens[id])
			require.NoError(t, err)
			require.Equal(t, id, got.ID, "a key authenticates its own account only")
			return got
		}
		setType := func(id string) {
			t.Helper()
			_, err := accounts.UpdateAccount(ctx, id, func(a *domain.Account) error { a.Type = domain.AccountPolicyFirst; return nil })
			require.NoError(t, err)
		}
		var ids []string
		for id := range tokens {
			ids = append(ids, id)
			authenticate(id)
		}
		a, b := ids[0], ids[1]

		setType(a)
		setType(b)
		require.Equal(t, domain.AccountLabelFirst, authenticate(a).Type, "within the TTL the cached account applies")
		keys.ForgetAccount(a)
		require.Equal(t, domain.AccountPolicyFirst, authenticate(a).Type, "this service's account change applies at once")
		require.Equal(t, domain.AccountLabelFirst, authenticate(b).Type, "forgetting one account keeps the others")
		clock.t = clock.t.Add(5 * time.Second)
		require.Equal(t, domain.AccountPolicyFirst, authenticate(b).Type, "after the TTL the change applies")

		keyID := func(token string) string {
			claims := jwt.RegisteredClaims{}
			_, _, err := jwt.NewParser().ParseUnverified(token, &claims)
			require.NoError(t, err)
			return claims.ID
		}
		authenticate(a) // read again: the entry above is stale now
		_, err = replica.Revoke(ctx, keyID(tokens[a]))
		require.NoError(t, err)
		authenticate(a) // revoked elsewhere, still cached here
		clock.t = clock.t.Add(5 * time.Second)
		_, err = keys.Authenticate(ctx, tokens[a])
		require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), "a revocation made elsewhere applies after the TTL")

		authenticate(b)
		_, err = keys.Revoke(ctx, keyID(tokens[b]))
		require.NoError(t, err)
		_, err = keys.Authenticate(ctx, tokens[b])
		require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), "this service's revocation applies at once")
	})
}
