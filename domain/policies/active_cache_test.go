package policies

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

// gatedReads is a policy read that counts its calls and holds the calls
// whose gate is set until it is closed.
type gatedReads struct {
	calls atomic.Int32
	mu    sync.Mutex
	gate  chan struct{}
	name  string // stored in the returned policy's Key
}

func (g *gatedReads) read(_ context.Context, accountID, policyID string) (*domain.Policy, error) {
	g.calls.Add(1)
	g.mu.Lock()
	gate, name := g.gate, g.name
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return &domain.Policy{ID: policyID, AccountID: accountID, Key: name}, nil
}

func (g *gatedReads) set(gate chan struct{}, name string) {
	g.mu.Lock()
	g.gate, g.name = gate, name
	g.mu.Unlock()
}

// Concurrent misses for one policy share one store read; another account's
// read of the same policy id is never shared nor served from the cache.
func TestActiveCache_SharedReads(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := newActiveCache(time.Second, clock)
	synctest.Test(t, func(t *testing.T) {
		g := &gatedReads{}
		gate := make(chan struct{})
		g.set(gate, "v1")
		ctx := t.Context()
		var wg sync.WaitGroup
		got := make([]*domain.Policy, 6)
		for i := range got {
			wg.Go(func() {
				acct := "a"
				if i == 0 {
					acct = "b"
				}
				p, err := c.get(ctx, acct, "p", g.read)
				require.NoError(t, err)
				got[i] = p
			})
		}
		synctest.Wait()
		require.Equal(t, int32(2), g.calls.Load(), "one read per account")
		close(gate)
		wg.Wait()
		require.Equal(t, "b", got[0].AccountID)
		for _, p := range got[1:] {
			require.Same(t, got[1], p)
			require.Equal(t, "a", p.AccountID)
		}
		g.set(nil, "v2")
		p, err := c.get(ctx, "b", "p", g.read)
		require.NoError(t, err)
		require.Same(t, got[0], p, "cached per account")
		require.Equal(t, int32(2), g.calls.Load())
	})
}

// A read started after a change never joins one started before it, and
// the older read's result is not cached.
func TestActiveCache_ChangeDuringRead(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := newActiveCache(time.Second, clock)
	synctest.Test(t, func(t *testing.T) {
		g := &gatedReads{}
		gate := make(chan struct{})
		g.set(gate, "before")
		ctx := t.Context()
		done := make(chan *domain.Policy)
		go func() {
			p, err := c.get(ctx, "a", "p", g.read)
			require.NoError(t, err)
			done <- p
		}()
		synctest.Wait()
		c.forget("a", "p")
		g.set(nil, "after")
		p, err := c.get(ctx, "a", "p", g.read)
		require.NoError(t, err)
		require.Equal(t, "after", p.Key, "a read after the change does not wait for the older one")
		close(gate)
		require.Equal(t, "before", (<-done).Key)
		p, err = c.get(ctx, "a", "p", g.read)
		require.NoError(t, err)
		require.Equal(t, "after", p.Key, "the older read was not cached over the newer")
		require.Equal(t, int32(2), g.calls.Load())
	})
}

// A caller whose context ends stops waiting; the others still get the
// shared read.
func TestActiveCache_CallerCanceled(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := newActiveCache(time.Second, clock)
	synctest.Test(t, func(t *testing.T) {
		g := &gatedReads{}
		gate := make(chan struct{})
		g.set(gate, "v")
		ctx, cancel := context.WithCancel(t.Context())
		leader := make(chan error)
		go func() {
			_, err := c.get(ctx, "a", "p", g.read)
			leader <- err
		}()
		synctest.Wait()
		follower := make(chan error)
		go func() {
			_, err := c.get(t.Context(), "a", "p", g.read)
			follower <- err
		}()
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-leader, context.Canceled)
		close(gate)
		require.NoError(t, <-follower)
		require.Equal(t, int32(1), g.calls.Load())
	})
}
