package policies

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

// memPolicies is an in-memory PolicyStore that counts policy reads; it
// stands for the database shared by several replicas.
type memPolicies struct {
	mu       sync.Mutex
	policies map[string]domain.Policy
	versions map[string]domain.PolicyVersion
	reads    int
}

func (m *memPolicies) CreatePolicy(_ context.Context, p *domain.Policy, v *domain.PolicyVersion) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p.ActiveVersionID = v.ID
	m.policies[p.ID], m.versions[v.ID] = *p, *v
	return nil
}

func (m *memPolicies) GetPolicyByKey(_ context.Context, accountID, key string) (*domain.Policy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	for _, p := range m.policies {
		if p.AccountID == accountID && p.Key == key {
			return &p, nil
		}
	}
	return nil, domain.Errorf(domain.NotFound, "policy key %q not found", key)
}

func (m *memPolicies) GetPolicy(_ context.Context, accountID, id string) (*domain.Policy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	p, ok := m.policies[id]
	if !ok || p.AccountID != accountID {
		return nil, domain.Errorf(domain.NotFound, "policy %q not found", id)
	}
	return &p, nil
}

func (m *memPolicies) ListPolicies(context.Context, string, *domain.PolicyCursor, int) ([]*domain.Policy, error) {
	return nil, nil
}

func (m *memPolicies) AddPolicyVersion(_ context.Context, accountID string, v *domain.PolicyVersion) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.policies[v.PolicyID]
	if !ok || p.AccountID != accountID {
		return domain.Errorf(domain.NotFound, "policy %q not found", v.PolicyID)
	}
	p.ActiveVersionID = v.ID
	m.policies[p.ID], m.versions[v.ID] = p, *v
	return nil
}

func (m *memPolicies) ActivatePolicyVersion(_ context.Context, accountID, policyID, versionID string, _ time.Time) (*domain.Policy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.policies[policyID]
	if v, found := m.versions[versionID]; !ok || p.AccountID != accountID || !found || v.PolicyID != policyID {
		return nil, domain.Errorf(domain.NotFound, "policy %q not found", policyID)
	}
	p.ActiveVersionID = versionID
	m.policies[policyID] = p
	return &p, nil
}

func (m *memPolicies) GetPolicyVersion(_ context.Context, policyID, versionID string) (*domain.PolicyVersion, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.versions[versionID]
	if !ok || v.PolicyID != policyID {
		return nil, domain.Errorf(domain.NotFound, "policy version %q not found", versionID)
	}
	return &v, nil
}

func (m *memPolicies) ListPolicyVersions(context.Context, string, int, int) ([]*domain.PolicyVersion, error) {
	return nil, nil
}

func (m *memPolicies) SetPolicyDisabled(_ context.Context, accountID, id string, disabled bool, _ time.Time) (*domain.Policy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.policies[id]
	if !ok || p.AccountID != accountID {
		return nil, domain.Errorf(domain.NotFound, "policy %q not found", id)
	}
	p.Disabled = disabled
	m.policies[id] = p
	return &p, nil
}

type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// The active-policy cache: reads within the TTL reuse the policy, this
// service's own changes apply at once, and a change made elsewhere (another
// replica, here the store directly) applies once the TTL has passed.
func TestPolicyService_ActiveCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := &memPolicies{policies: map[string]domain.Policy{}, versions: map[string]domain.PolicyVersion{}}
	clock := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := NewService(store, clock, nil, Config{ActiveTTL: time.Second}, nil)
	account := &domain.Account{ID: "acct"}
	p, v1, err := s.Create(ctx, account, "p", `LABEL "a": "x" { "alpha" }`)
	require.NoError(t, err)

	active := func() (string, error) {
		t.Helper()
		_, v, _, err := s.ActivePlan(ctx, account.ID, p.ID)
		if err != nil {
			return "", err
		}
		return v.ID, nil
	}
	got, err := active()
	require.NoError(t, err)
	require.Equal(t, v1.ID, got)
	reads := store.reads
	for range 10 {
		_, err := active()
		require.NoError(t, err)
	}
	require.Equal(t, reads, store.reads, "reads within the TTL come from the cache")

	v2, err := s.AddVersion(ctx, account, p.ID, `LABEL "b": "x" { "beta" }`)
	require.NoError(t, err)
	got, err = active()
	require.NoError(t, err)
	require.Equal(t, v2.ID, got, "this service's new version applies at once")

	_, err = s.SetDisabled(ctx, account.ID, p.ID, true)
	require.NoError(t, err)
	_, err = active()
	require.Equal(t, domain.FailedPrecondition, domain.ErrorCode(err), "this service's disable applies at once")
	_, err = s.SetDisabled(ctx, account.ID, p.ID, false)
	require.NoError(t, err)
	_, err = active()
	require.NoError(t, err)

	// Another replica disables the policy.
	_, err = store.SetPolicyDisabled(ctx, account.ID, p.ID, true, clock.Now())
	require.NoError(t, err)
	_, err = active()
	require.NoError(t, err, "within the TTL the cached policy still applies")
	clock.advance(time.Second)
	_, err = active()
	require.Equal(t, domain.FailedPrecondition, domain.ErrorCode(err), "after the TTL the change applies")

	// Other accounts never see the policy, cached or not.
	_, _, _, err = s.ActivePlan(ctx, "other", p.ID)
	require.Equal(t, domain.NotFound, domain.ErrorCode(err))

	// TTL 0 reads every time.
	uncached := NewService(store, clock, nil, Config{}, nil)
	reads = store.reads
	for range 3 {
		_, _, _, _ = uncached.ActivePlan(ctx, account.ID, p.ID)
	}
	require.Equal(t, reads+3, store.reads)
}

// GetByKey reads the store once per key and then goes through the active
// cache, as jobs do: a disabled policy shows once the TTL has passed, and an
// unknown key or another account's is NOT_FOUND every time.
func TestPolicyService_GetByKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := &memPolicies{policies: map[string]domain.Policy{}, versions: map[string]domain.PolicyVersion{}}
	clock := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := NewService(store, clock, nil, Config{ActiveTTL: time.Second}, nil)
	account, other := &domain.Account{ID: "acct"}, &domain.Account{ID: "other"}
	p, _, err := s.Create(ctx, account, "mod", `LABEL "a": "x" { "alpha" }`)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		account *domain.Account
		key     string
		found   bool
	}{
		{"the key", account, "mod", true},
		{"unknown key", account, "nope", false},
		{"another account's", other, "mod", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.GetByKey(ctx, tc.account, tc.key)
			if !tc.found {
				require.Equal(t, domain.NotFound, domain.ErrorCode(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, p.ID, got.ID)
		})
	}
	// The second call warms the active cache; the later ones read nothing.
	_, err = s.GetByKey(ctx, account, "mod")
	require.NoError(t, err)
	reads := store.reads
	for range 5 {
		got, err := s.GetByKey(ctx, account, "mod")
		require.NoError(t, err)
		require.Equal(t, p.ID, got.ID)
	}
	require.Equal(t, reads, store.reads, "a known key is read from the caches")
	_, err = s.SetDisabled(ctx, account.ID, p.ID, true)
	require.NoError(t, err)
	got, err := s.GetByKey(ctx, account, "mod")
	require.NoError(t, err)
	require.True(t, got.Disabled, "this service's own change applies at once")
}
