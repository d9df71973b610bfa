package access

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

type stillClock struct{ t time.Time }

func (c *stillClock) Now() time.Time { return c.t }

// A key read before an invalidation is not cached after it: the revocation
// would otherwise be undone for a TTL.
func TestKeyCache_ReadRacingRevocation(t *testing.T) {
	t.Parallel()
	clock := &stillClock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	c := newKeyCache(time.Minute, clock)
	e := cachedKey{key: &domain.APIKey{ID: "k", AccountID: "a"}, account: &domain.Account{ID: "a"}, fetched: clock.t}

	_, changes, ok := c.get("k")
	require.False(t, ok)
	c.forget(func(id string, _ cachedKey) bool { return id == "k" })
	c.put("k", e, changes)
	_, _, ok = c.get("k")
	require.False(t, ok, "the read that raced with the revocation is not cached")

	_, changes, _ = c.get("k")
	c.put("k", e, changes)
	got, _, ok := c.get("k")
	require.True(t, ok)
	require.Same(t, e.key, got.key)

	clock.t = clock.t.Add(time.Minute)
	_, _, ok = c.get("k")
	require.False(t, ok, "stale on the service's clock")

	off := newKeyCache(0, clock)
	_, changes, _ = off.get("k")
	off.put("k", e, changes)
	_, _, ok = off.get("k")
	require.False(t, ok, "TTL 0 caches nothing")
}

// gatedKeys is a KeyStore and AccountStore whose reads are counted and held
// until the gate, when set, is closed.
type gatedKeys struct {
	domain.KeyStore
	domain.AccountStore
	mu      sync.Mutex
	gate    chan struct{}
	reads   int
	revoked *time.Time
}

func (g *gatedKeys) GetKey(_ context.Context, id string) (*domain.APIKey, error) {
	g.mu.Lock()
	g.reads++
	gate, revoked := g.gate, g.revoked
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	// Key "k-ACCOUNT" belongs to ACCOUNT.
	return &domain.APIKey{ID: id, AccountID: strings.TrimPrefix(id, "k-"), RevokedAt: revoked}, nil
}

func (g *gatedKeys) RevokeKey(_ context.Context, id string, t time.Time) (*domain.APIKey, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revoked = &t
	return &domain.APIKey{ID: id, AccountID: strings.TrimPrefix(id, "k-"), RevokedAt: &t}, nil
}

func (g *gatedKeys) GetAccount(_ context.Context, id string) (*domain.Account, error) {
	return &domain.Account{ID: id}, nil
}

func (g *gatedKeys) set(gate chan struct{}, revoked *time.Time) {
	g.mu.Lock()
	g.gate, g.revoked = gate, revoked
	g.mu.Unlock()
}

func (g *gatedKeys) readCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reads
}

// Concurrent requests with one key share one read, each key is read for
// its own account, and a request after a revocation never joins a read
// started before it.
func TestKeyService_SharedReads(t *testing.T) {
	t.Parallel()
	clock := &stillClock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	store := &gatedKeys{}
	s := NewKeyService(store, store, priv, clock, time.Minute)
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		gate := make(chan struct{})
		store.set(gate, nil)
		var wg sync.WaitGroup
		accounts := make([]string, 6)
		for i := range accounts {
			wg.Go(func() {
				id := "k-a"
				if i == 0 {
					id = "k-b"
				}
				_, a, err := s.lookup(ctx, id)
				require.NoError(t, err)
				accounts[i] = a.ID
			})
		}
		synctest.Wait()
		require.Equal(t, 2, store.readCount(), "one read per key")
		close(gate)
		wg.Wait()
		require.Equal(t, []string{"b", "a", "a", "a", "a", "a"}, accounts)

		gate = make(chan struct{})
		store.set(gate, nil)
		s.cache.forget(func(string, cachedKey) bool { return true })
		before := make(chan *domain.APIKey)
		go func() {
			k, _, err := s.lookup(ctx, "k-a")
			require.NoError(t, err)
			before <- k
		}()
		synctest.Wait()
		store.set(nil, nil)
		_, err := s.Revoke(ctx, "k-a")
		require.NoError(t, err)
		k, _, err := s.lookup(ctx, "k-a")
		require.NoError(t, err)
		require.NotNil(t, k.RevokedAt, "the read after the revocation is its own")
		close(gate)
		require.NotNil(t, <-before)
		k, _, err = s.lookup(ctx, "k-a")
		require.NoError(t, err)
		require.NotNil(t, k.RevokedAt, "the older read was not cached over the newer")
		require.Equal(t, 4, store.readCount())
	})
}
