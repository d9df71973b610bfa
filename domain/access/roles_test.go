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

// A key's role and name travel signed in its token and are stored with its
// row; a token without a role (issued before roles) acts as admin; a role
// cannot be changed without the signing key; revocation still applies.
func TestKeyRoles(t *testing.T) {
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
		store := persistence.NewKeys(db)
		keys := access.NewKeyService(store, accounts, priv, clock, time.Minute)

		for _, tc := range []struct {
			role domain.KeyRole
			name string
		}{{domain.RoleAdmin, ""}, {domain.RoleAPI, "backend"}, {domain.RoleReviewer, "Ana"}} {
			k, token, err := keys.IssueRole(ctx, acct.ID, tc.name, tc.role, 0)
			require.NoError(t, err)
			c, err := keys.AuthenticateCaller(ctx, token)
			require.NoError(t, err)
			require.Equal(t, access.Caller{Account: c.Account, KeyID: k.ID, KeyName: tc.name, Role: tc.role}, c)
			stored, err := store.GetKey(ctx, k.ID)
			require.NoError(t, err)
			require.Equal(t, tc.role, stored.Role)
			require.Equal(t, tc.name, stored.Name)
			claims := jwt.MapClaims{}
			_, _, err = jwt.NewParser().ParseUnverified(token, claims)
			require.NoError(t, err)
			require.Equal(t, string(tc.role), claims["role"])
		}
		_, _, err = keys.IssueRole(ctx, acct.ID, "x", "owner", 0)
		require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err))

		// A key row written before roles: the column's default, and a
		// token with registered claims only.
		old := &domain.APIKey{ID: domain.NewID(), AccountID: acct.ID, Created: clock.t}
		require.NoError(t, store.CreateKey(ctx, old))
		oldToken, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{
			Issuer: access.TokenIssuer, Subject: acct.ID, ID: old.ID,
		}).SignedString(priv)
		require.NoError(t, err)
		c, err := keys.AuthenticateCaller(ctx, oldToken)
		require.NoError(t, err)
		require.Equal(t, domain.RoleAdmin, c.Role, "a token without a role acts as admin")

		_, otherKey, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		for name, tc := range map[string]struct {
			role string
			key  ed25519.PrivateKey
		}{
			"promoted without the signing key": {"admin", otherKey},
			"unknown role":                     {"owner", priv},
		} {
			forged, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
				"iss": access.TokenIssuer, "sub": acct.ID, "jti": old.ID, "role": tc.role,
			}).SignedString(tc.key)
			require.NoError(t, err)
			_, err = keys.AuthenticateCaller(ctx, forged)
			require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), name)
		}

		_, err = keys.Revoke(ctx, old.ID)
		require.NoError(t, err)
		_, err = keys.AuthenticateCaller(ctx, oldToken)
		require.Equal(t, domain.Unauthenticated, domain.ErrorCode(err), "revoked")
	})
}

func TestRoleSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  access.RoleSet
		want map[domain.KeyRole]bool
	}{
		{access.AdminOnly, map[domain.KeyRole]bool{domain.RoleAdmin: true}},
		{access.EvaluateOrRead, map[domain.KeyRole]bool{domain.RoleAdmin: true, domain.RoleAPI: true}},
		{access.Roles(), map[domain.KeyRole]bool{}},
	} {
		for _, r := range append(domain.KeyRoles, "", "owner") {
			require.Equal(t, tc.want[r], tc.set.Has(r), "%v has %q", tc.set, r)
		}
	}
}
