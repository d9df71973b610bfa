package persistence_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func TestAccounts_CreateGet(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		s := persistence.NewAccounts(db)
		a := newAccount("acc-1", t0)
		a.Type = domain.AccountPolicyFirst
		a.Updated = t0.Add(time.Hour)
		require.NoError(t, s.CreateAccount(t.Context(), a))

		got, err := s.GetAccount(t.Context(), "acc-1")
		require.NoError(t, err)
		require.Equal(t, a, got)
		require.Equal(t, persistence.StoredTime(t0), got.Created)
	})
}

func TestAccounts_CreateDuplicate(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		s := persistence.NewAccounts(db)
		require.NoError(t, s.CreateAccount(t.Context(), newAccount("dup", t0)))

		err := s.CreateAccount(t.Context(), newAccount("dup", t0.Add(time.Second)))
		requireCode(t, err, domain.AlreadyExists)
		require.Contains(t, domain.ErrorMessage(err), `"dup"`)

		got, err := s.GetAccount(t.Context(), "dup")
		require.NoError(t, err)
		require.Equal(t, persistence.StoredTime(t0), got.Created, "the first account is kept")
	})
}

func TestAccounts_GetNotFound(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		_, err := persistence.NewAccounts(db).GetAccount(t.Context(), "nope")
		requireCode(t, err, domain.NotFound)
		require.Equal(t, `account "nope" not found`, domain.ErrorMessage(err))
	})
}

func TestAccounts_ListAndCount(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		s := persistence.NewAccounts(db)
		ctx := t.Context()

		list, err := s.ListAccounts(ctx)
		require.NoError(t, err)
		require.NotNil(t, list)
		require.Empty(t, list)
		n, err := s.CountAccounts(ctx)
		require.NoError(t, err)
		require.Zero(t, n)

		// Inserted out of order; "b" and "c" share a created time, so id
		// breaks the tie; "a" is one microsecond later than them.
		for _, a := range []*domain.Account{
			newAccount("d", t0.Add(time.Second)),
			newAccount("a", t0.Add(time.Microsecond)),
			newAccount("c", t0),
			newAccount("b", t0),
			newAccount("e", t0.Add(-time.Hour)),
		} {
			require.NoError(t, s.CreateAccount(ctx, a))
		}
		list, err = s.ListAccounts(ctx)
		require.NoError(t, err)
		var ids []string
		for _, a := range list {
			ids = append(ids, a.ID)
		}
		require.Equal(t, []string{"e", "b", "c", "a", "d"}, ids)

		n, err = s.CountAccounts(ctx)
		require.NoError(t, err)
		require.Equal(t, 5, n)
	})
}

func TestAccounts_Update(t *testing.T) {
	t.Parallel()
	errFn := errors.New("fn refused")
	tests := []struct {
		name     string
		id       string // "" means the seeded account
		fn       func(a *domain.Account) error
		wantCode domain.Code // OK: success
		wantErr  error       // when set, returned unchanged
		want     func(a *domain.Account)
	}{
		{
			name: "limits type name and secret",
			fn: func(a *domain.Account) error {
				a.Name = "renamed"
				a.Type = domain.AccountPolicyFirst
				a.Limits = domain.Limits{RequestsPerSecond: 0.5, Burst: 1, EvaluationsPerDay: 10}
				a.WebhookSecret = "rotated"
				a.Updated = t0.Add(time.Minute + time.Nanosecond)
				return nil
			},
			want: func(a *domain.Account) {
				a.Name = "renamed"
				a.Type = domain.AccountPolicyFirst
				a.Limits = domain.Limits{RequestsPerSecond: 0.5, Burst: 1, EvaluationsPerDay: 10}
				a.WebhookSecret = "rotated"
				a.Updated = persistence.StoredTime(t0.Add(time.Minute))
			},
		},
		{
			name: "id and created are not changed",
			fn: func(a *domain.Account) error {
				a.ID = "other"
				a.Created = t0.Add(time.Hour)
				a.Name = "kept"
				return nil
			},
			want: func(a *domain.Account) { a.Name = "kept" },
		},
		{
			name:    "fn error is returned unchanged and nothing saved",
			fn:      func(a *domain.Account) error { a.Name = "lost"; return errFn },
			wantErr: errFn,
		},
		{
			name: "fn domain error is returned unchanged",
			fn: func(a *domain.Account) error {
				a.Name = "lost"
				return domain.Errorf(domain.NotFound, "fn's own not found")
			},
			wantCode: domain.NotFound,
		},
		{
			name:     "unknown account",
			id:       "missing",
			fn:       func(a *domain.Account) error { t.Error("fn called for a missing account"); return nil },
			wantCode: domain.NotFound,
		},
	}
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		s := persistence.NewAccounts(db)
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				seed := newAccount(fmt.Sprintf("upd-%d", i), t0)
				require.NoError(t, s.CreateAccount(t.Context(), seed))
				id := tt.id
				if id == "" {
					id = seed.ID
				}

				got, err := s.UpdateAccount(t.Context(), id, tt.fn)

				stored, getErr := s.GetAccount(t.Context(), seed.ID)
				require.NoError(t, getErr)
				switch {
				case tt.wantErr != nil:
					require.Same(t, tt.wantErr, err)
					require.Nil(t, got)
					require.Equal(t, seed, stored)
				case tt.wantCode != domain.OK:
					requireCode(t, err, tt.wantCode)
					require.Nil(t, got)
					require.Equal(t, seed, stored)
					if tt.id != "" {
						require.Equal(t, fmt.Sprintf("account %q not found", tt.id), domain.ErrorMessage(err))
					} else {
						require.Equal(t, "fn's own not found", domain.ErrorMessage(err))
					}
				default:
					require.NoError(t, err)
					want := newAccount(seed.ID, persistence.StoredTime(t0))
					tt.want(want)
					require.Equal(t, want, got)
					require.Equal(t, want, stored)
				}
			})
		}
	})
}

func TestAccounts_TimeRoundTrip(t *testing.T) {
	t.Parallel()
	ny := time.FixedZone("EDT", -4*60*60) // no tzdata needed
	now := time.Now()                     // carries a monotonic reading, which must not matter
	tests := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"nanoseconds truncated, not rounded", time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 999999000, time.UTC)},
		{"microseconds kept", time.Date(2026, 1, 2, 3, 4, 5, 1000, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 1000, time.UTC)},
		{"whole seconds", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"other zone becomes UTC", time.Date(2026, 7, 1, 12, 0, 0, 500, ny), time.Date(2026, 7, 1, 16, 0, 0, 0, time.UTC)},
		{"before 1970", time.Date(1960, 5, 6, 7, 8, 9, 123456000, time.UTC), time.Date(1960, 5, 6, 7, 8, 9, 123456000, time.UTC)},
		{"far future", time.Date(2999, 12, 31, 23, 59, 59, 999999000, time.UTC), time.Date(2999, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		{"wall clock now", now, now.UTC().Truncate(time.Microsecond)},
	}
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		s := persistence.NewAccounts(db)
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				a := newAccount(fmt.Sprintf("time-%d", i), tt.in)
				require.NoError(t, s.CreateAccount(t.Context(), a))
				got, err := s.GetAccount(t.Context(), a.ID)
				require.NoError(t, err)
				require.Equal(t, tt.want, got.Created)
				require.Equal(t, time.UTC, got.Created.Location())
				require.Equal(t, got.Created, a.Created, "CreateAccount normalizes its argument")
			})
		}
	})
}
