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

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

// The key service on the real stores: a key authenticates its account
// until it expires or is revoked; a token signed by another key, or of
// another issuer, never does.
func TestKeys(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		clock := &fixedClock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
		accounts := persistence.NewAccounts(db)
		acct := &domain.Account{ID: domain.NewID(), Name: "acme", Type: domain.AccountLabelFirst, WebhookSecret: "whsec_x",
			Created: clock.t, Updated: clock.t}
		require.NoError(t, accounts.CreateAccount(ctx, acct))
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		keys := access.NewKeyService(persistence.NewKeys(db), accounts, priv, clock, 0)

		key, token, err := keys.Issue(ctx, acct.ID, "ci", time.Hour)
		require.NoError(t, err)
		got, err := keys.Authenticate(ctx, token)
		require.NoError(t, err)
		require.Equal(t, acct.ID, got.ID)

		_, otherKey, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		for name, claims := range map[string]jwt.RegisteredClaims{
			"signed by another key": {Issuer: access.TokenIssuer, Subject: acct.ID, ID: key.ID},
		} {
			forged, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims).SignedString(otherKey)
			require.NoError(t, err)
			_, err = keys.Authenticate(ctx, forged)
			require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), name)
		}
		_, err = keys.Authenticate(ctx, "not a token")
		require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err))

		clock.t = clock.t.Add(2 * time.Hour)
		_, err = keys.Authenticate(ctx, token)
		require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), "expired")

		_, token, err = keys.Issue(ctx, acct.ID, "ci", time.Hour)
		require.NoError(t, err)
		claims := jwt.RegisteredClaims{}
		_, _, err = jwt.NewParser().ParseUnverified(token, &claims)
		require.NoError(t, err)
		_, err = keys.Revoke(ctx, claims.ID)
		require.NoError(t, err)
		_, err = keys.Authenticate(ctx, token)
		require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), "revoked")
	})
}

func TestRateLimiter(t *testing.T) {
	t.Parallel()
	clock := &fixedClock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	limiter := access.NewRateLimiter(domain.Limits{RequestsPerSecond: 1, Burst: 2}, clock)
	a, b := &domain.Account{ID: "a"}, &domain.Account{ID: "b"}
	for range 2 {
		_, err := limiter.Allow(a)
		require.NoError(t, err)
	}
	wait, err := limiter.Allow(a)
	require.Equal(t, domain.ResourceExhausted, domain.ErrorCode(err), "over the burst")
	require.Equal(t, time.Second, wait, "retry after a whole second")
	_, err = limiter.Allow(b)
	require.NoError(t, err, "accounts have buckets of their own")
	clock.t = clock.t.Add(time.Second)
	_, err = limiter.Allow(a)
	require.NoError(t, err, "refilled")
	own := &domain.Account{ID: "c", Limits: domain.Limits{RequestsPerSecond: 100, Burst: 5}}
	for range 5 {
		_, err := limiter.Allow(own)
		require.NoError(t, err, "an account's own limits")
	}
}

// Admit's order: who the caller is, then how fast, then what it may call.
func TestAdmit(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		clock := &fixedClock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
		accounts := persistence.NewAccounts(db)
		acct := &domain.Account{ID: domain.NewID(), Name: "acme", Type: domain.AccountLabelFirst, WebhookSecret: "whsec_x",
			Limits: domain.Limits{RequestsPerSecond: 1, Burst: 1}, Created: clock.t, Updated: clock.t}
		require.NoError(t, accounts.CreateAccount(ctx, acct))
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		keys := access.NewKeyService(persistence.NewKeys(db), accounts, priv, clock, 0)
		limiter := access.NewRateLimiter(domain.Limits{}, clock)
		_, token, err := keys.Issue(ctx, acct.ID, "ci", time.Hour)
		require.NoError(t, err)

		for _, header := range []string{"", "Bearer", "Basic " + token, "Bearer not-a-token"} {
			a, wait, err := access.Admit(ctx, keys, limiter, header, "op", access.AdminOnly, "")
			require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), "%q", header)
			require.Nil(t, a.Account)
			require.Zero(t, wait)
		}
		_, _, err = access.Admit(ctx, keys, limiter, "bearer  "+token+" ", "listPolicies", access.AdminOnly, domain.AccountPolicyFirst)
		require.Equal(t, domain.FailedPrecondition, domain.ErrorCode(err), "the account type, once authenticated")
		require.Contains(t, err.Error(), "listPolicies is only available to policy-first accounts")
		a, wait, err := access.Admit(ctx, keys, limiter, "Bearer "+token, "op", access.AdminOnly, domain.AccountPolicyFirst)
		require.Equal(t, domain.ResourceExhausted, domain.ErrorCode(err), "the rate before the account type")
		require.Equal(t, time.Second, wait)
		require.Equal(t, acct.ID, a.Account.ID, "the account is known for the log")
		clock.t = clock.t.Add(time.Second)
		a, wait, err = access.Admit(ctx, keys, limiter, "Bearer "+token, "op", access.AdminOnly, domain.AccountLabelFirst)
		require.NoError(t, err)
		require.Zero(t, wait)
		require.Equal(t, acct.ID, a.Account.ID)

		_, reviewer, err := keys.IssueRole(ctx, acct.ID, "Ana", domain.RoleReviewer, time.Hour)
		require.NoError(t, err)
		clock.t = clock.t.Add(time.Second)
		_, _, err = access.Admit(ctx, keys, limiter, "Bearer "+reviewer, "createPolicy", access.AdminOnly, domain.AccountPolicyFirst)
		require.Equal(t, domain.PermissionDenied, domain.ErrorCode(err), "the role before the account type")
		require.Contains(t, err.Error(), "createPolicy is not available to reviewer keys")
	})
}
