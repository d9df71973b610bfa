package persistence_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func newPolicy(account, id, key string, created time.Time) (*domain.Policy, *domain.PolicyVersion) {
	p := &domain.Policy{ID: id, AccountID: account, Key: key, ActiveVersionID: id + "-v1", Created: created, Updated: created}
	v := &domain.PolicyVersion{
		ID: id + "-v1", PolicyID: id, Seq: 1, Text: `LABEL "A" { =("a") }`, Created: created,
		TokenCounts: rules.TokenCounts{DSLTokenCount: 7, SignalTokens: 1, SignalSpecialTokens: 9, ContentSpecialTokens: 20}, ComplexityScore: 1,
	}
	return p, v
}

func TestPolicies_CreateGetVersions(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		accounts := persistence.NewAccounts(db)
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("a1", t0)))
		require.NoError(t, accounts.CreateAccount(ctx, newAccount("a2", t0)))
		s := persistence.NewPolicies(db)

		p, v := newPolicy("a1", "p1", "main", t0)
		require.NoError(t, s.CreatePolicy(ctx, p, v))
		got, err := s.GetPolicy(ctx, "a1", "p1")
		require.NoError(t, err)
		require.Equal(t, p, got)
		gv, err := s.GetPolicyVersion(ctx, "p1", "p1-v1")
		require.NoError(t, err)
		require.Equal(t, v, gv)

		_, err = s.GetPolicy(ctx, "a2", "p1")
		requireCode(t, err, domain.NotFound)
		dup, dv := newPolicy("a1", "p2", "main", t0)
		requireCode(t, s.CreatePolicy(ctx, dup, dv), domain.AlreadyExists)
		other, ov := newPolicy("a2", "p3", "main", t0)
		require.NoError(t, s.CreatePolicy(ctx, other, ov), "keys are unique per account only")

		// Concurrent versions get distinct sequence numbers; the last one
		// added is active.
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nv := &domain.PolicyVersion{ID: fmt.Sprintf("p1-x%d", i), PolicyID: "p1", Text: "x", Created: t0.Add(time.Minute)}
				for {
					err := s.AddPolicyVersion(ctx, "a1", nv)
					if c := domain.ErrorCode(err); c == domain.Aborted || c == domain.Unavailable {
						continue
					}
					require.NoError(t, err)
					return
				}
			}()
		}
		wg.Wait()
		vs, err := s.ListPolicyVersions(ctx, "p1", 0, 100)
		require.NoError(t, err)
		require.Len(t, vs, 7)
		for i, v := range vs {
			require.Equal(t, i+1, v.Seq)
		}
		got, err = s.GetPolicy(ctx, "a1", "p1")
		require.NoError(t, err)
		require.Equal(t, vs[6].ID, got.ActiveVersionID)
		page, err := s.ListPolicyVersions(ctx, "p1", 5, 100)
		require.NoError(t, err)
		require.Len(t, page, 2)
		requireCode(t, s.AddPolicyVersion(ctx, "a2", &domain.PolicyVersion{ID: "z", PolicyID: "p1", Created: t0}), domain.NotFound)

		dis, err := s.SetPolicyDisabled(ctx, "a1", "p1", true, t0.Add(time.Hour))
		require.NoError(t, err)
		require.True(t, dis.Disabled)
		_, err = s.SetPolicyDisabled(ctx, "a2", "p1", true, t0)
		requireCode(t, err, domain.NotFound)
	})
}

func TestPolicies_ListNewestFirst(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		s := persistence.NewPolicies(db)
		for i := range 3 {
			p, v := newPolicy("a1", fmt.Sprintf("p%d", i), fmt.Sprintf("k%d", i), t0.Add(time.Duration(i)*time.Second))
			require.NoError(t, s.CreatePolicy(ctx, p, v))
		}
		ps, err := s.ListPolicies(ctx, "a1", nil, 2)
		require.NoError(t, err)
		require.Equal(t, []string{"p2", "p1"}, []string{ps[0].ID, ps[1].ID})
		ps, err = s.ListPolicies(ctx, "a1", &domain.PolicyCursor{Created: ps[1].Created, ID: ps[1].ID}, 2)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, "p0", ps[0].ID)
	})
}
