package policies

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// activePolicyCacheSize bounds the policies kept for ActiveTTL.
const activePolicyCacheSize = 4096

// activeReadTimeout bounds a store read shared by concurrent jobs: it runs
// apart from the context of the job that started it, so that one job's
// cancellation does not fail the others waiting for the same policy.
const activeReadTimeout = 30 * time.Second

type activeKey struct{ account, policy string }

type activePolicy struct {
	policy *domain.Policy
	read   time.Time
}

// activeCache keeps policies read for jobs, by account and policy id, for a
// TTL: every synchronous job would otherwise pay a database round trip (a
// third of the database work of a small job) for a row that changes only
// when a version is added or the policy is disabled.
//
// Freshness is judged on the service's clock; the LRU's size bounds the
// memory, so a stale entry needs no timer of its own to be freed (an
// expiring LRU would run a goroutine per cache for nothing).
type activeCache struct {
	ttl      time.Duration
	clock    domain.Clock
	policies *lru.Cache[activeKey, activePolicy]
	reads    singleflight.Group

	mu sync.Mutex
	// changes counts forget calls, so that a read which raced with a change
	// is not cached as if it were current, and a read started after a change
	// never joins one started before it.
	changes uint64
}

func newActiveCache(ttl time.Duration, clock domain.Clock) *activeCache {
	c := &activeCache{ttl: ttl, clock: clock}
	if ttl > 0 {
		c.policies, _ = lru.New[activeKey, activePolicy](activePolicyCacheSize) // errs only on a size <= 0
	}
	return c
}

// forget drops a policy after a change to it.
func (c *activeCache) forget(accountID, policyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.policies != nil {
		c.policies.Remove(activeKey{accountID, policyID})
	}
	c.changes++
}

// get returns the policy, from the cache when it was read less than the TTL
// ago, otherwise from read; concurrent misses for one policy share one read.
func (c *activeCache) get(ctx context.Context, accountID, policyID string,
	read func(ctx context.Context, accountID, policyID string) (*domain.Policy, error)) (*domain.Policy, error) {
	if c.policies == nil {
		return read(ctx, accountID, policyID)
	}
	k := activeKey{accountID, policyID}
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.policies.Get(k)
	changes := c.changes
	c.mu.Unlock()
	if ok && now.Sub(e.read) < c.ttl && now.Sub(e.read) >= 0 {
		return e.policy, nil
	}
	// The account is part of the flight's key: a caller only ever shares a
	// read of its own account's policy.
	flight := strconv.Quote(accountID) + strconv.Quote(policyID) + strconv.FormatUint(changes, 10)
	ch := c.reads.DoChan(flight, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), activeReadTimeout)
		defer cancel()
		p, err := read(rctx, accountID, policyID)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.changes == changes {
			c.policies.Add(k, activePolicy{policy: p, read: now})
		}
		c.mu.Unlock()
		return p, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*domain.Policy), nil
	}
}
