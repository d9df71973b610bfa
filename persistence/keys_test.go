package persistence_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// keysBundle is what every key test starts from: the stores and one account.
type keysBundle struct {
	accounts *persistence.Accounts
	keys     *persistence.Keys
	account  *domain.Account
}

func setupKeys(t *testing.T, db *persistence.DB) *keysBundle {
	t.Helper()
	b := &keysBundle{
		accounts: persistence.NewAccounts(db),
		keys:     persistence.NewKeys(db),
		account:  newAccount("owner", t0),
	}
	require.NoError(t, b.accounts.CreateAccount(t.Context(), b.account))
	return b
}

func ptr[T any](v T) *T { return &v }

func TestKeys_CreateGet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		expires *time.Time
		revoked *time.Time
	}{
		{name: "no expiry", expires: nil},
		{name: "with expiry", expires: ptr(t0.Add(720 * time.Hour))},
		{name: "expiry in the past", expires: ptr(t0.Add(-time.Hour))},
		{name: "created revoked", revoked: ptr(t0.Add(time.Minute))},
	}
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupKeys(t, db)
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				k := &domain.APIKey{
					ID: fmt.Sprintf("key-%d", i), AccountID: b.account.ID, Name: tt.name,
					Created: t0, ExpiresAt: tt.expires, RevokedAt: tt.revoked,
				}
				require.NoError(t, b.keys.CreateKey(t.Context(), k))
				require.Equal(t, persistence.StoredTime(t0), k.Created, "CreateKey normalizes its argument")

				got, err := b.keys.GetKey(t.Context(), k.ID)
				require.NoError(t, err)
				require.Equal(t, k, got)
				if tt.expires == nil {
					require.Nil(t, got.ExpiresAt)
				} else {
					require.Equal(t, persistence.StoredTime(*tt.expires), *got.ExpiresAt)
					require.Equal(t, time.UTC, got.ExpiresAt.Location())
				}
				if tt.revoked == nil {
					require.Nil(t, got.RevokedAt)
				}
			})
		}
	})
}

func TestKeys_CreateErrors(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupKeys(t, db)
		ctx := t.Context()
		require.NoError(t, b.keys.CreateKey(ctx, &domain.APIKey{ID: "k1", AccountID: b.account.ID, Created: t0}))

		err := b.keys.CreateKey(ctx, &domain.APIKey{ID: "k2", AccountID: "ghost", Created: t0})
		requireCode(t, err, domain.NotFound)
		require.Equal(t, `account "ghost" not found`, domain.ErrorMessage(err))

		err = b.keys.CreateKey(ctx, &domain.APIKey{ID: "k1", AccountID: b.account.ID, Created: t0})
		requireCode(t, err, domain.AlreadyExists)
		require.Equal(t, `API key "k1" already exists`, domain.ErrorMessage(err))

		_, err = b.keys.GetKey(ctx, "k2")
		requireCode(t, err, domain.NotFound)
		require.Equal(t, `API key "k2" not found`, domain.ErrorMessage(err))
	})
}

func TestKeys_List(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupKeys(t, db)
		ctx := t.Context()
		other := newAccount("other", t0)
		require.NoError(t, b.accounts.CreateAccount(ctx, other))

		for _, k := range []*domain.APIKey{
			{ID: "k-late", AccountID: b.account.ID, Created: t0.Add(time.Second)},
			{ID: "k-micro", AccountID: b.account.ID, Created: t0.Add(time.Microsecond)},
			{ID: "k-b", AccountID: b.account.ID, Created: t0},
			{ID: "k-a", AccountID: b.account.ID, Created: t0},
			{ID: "k-other", AccountID: other.ID, Created: t0},
		} {
			require.NoError(t, b.keys.CreateKey(ctx, k))
		}

		got, err := b.keys.ListKeys(ctx, b.account.ID)
		require.NoError(t, err)
		var ids []string
		for _, k := range got {
			ids = append(ids, k.ID)
		}
		require.Equal(t, []string{"k-a", "k-b", "k-micro", "k-late"}, ids)

		got, err = b.keys.ListKeys(ctx, "ghost")
		require.NoError(t, err)
		require.NotNil(t, got)
		require.Empty(t, got)
	})
}

func TestKeys_Revoke(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupKeys(t, db)
		ctx := t.Context()
		k := &domain.APIKey{ID: "k", AccountID: b.account.ID, Created: t0, ExpiresAt: ptr(t0.Add(time.Hour))}
		require.NoError(t, b.keys.CreateKey(ctx, k))

		first := t0.Add(time.Minute + 789*time.Nanosecond)
		got, err := b.keys.RevokeKey(ctx, "k", first)
		require.NoError(t, err)
		require.NotNil(t, got.RevokedAt)
		require.Equal(t, persistence.StoredTime(first), *got.RevokedAt)
		require.Equal(t, k.ExpiresAt, got.ExpiresAt)

		got, err = b.keys.RevokeKey(ctx, "k", first.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, persistence.StoredTime(first), *got.RevokedAt, "revoking twice keeps the first time")

		stored, err := b.keys.GetKey(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, got, stored)

		_, err = b.keys.RevokeKey(ctx, "ghost", first)
		requireCode(t, err, domain.NotFound)
		require.Equal(t, `API key "ghost" not found`, domain.ErrorMessage(err))
	})
}

// Racing revocations: exactly one time wins and every caller sees it.
func TestKeys_RevokeConcurrently(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupKeys(t, db)
		ctx := t.Context()
		require.NoError(t, b.keys.CreateKey(ctx, &domain.APIKey{ID: "k", AccountID: b.account.ID, Created: t0}))

		const n = 10
		seen := make([]time.Time, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				k, err := b.keys.RevokeKey(ctx, "k", t0.Add(time.Duration(i+1)*time.Second))
				errs[i] = err
				if err == nil {
					seen[i] = *k.RevokedAt
				}
			})
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			require.Equal(t, seen[0], seen[i])
		}
		stored, err := b.keys.GetKey(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, seen[0], *stored.RevokedAt)
	})
}
