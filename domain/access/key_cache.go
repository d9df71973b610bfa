package access

import (
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// keyReadTimeout bounds a store read shared by concurrent requests.
const keyReadTimeout = 30 * time.Second

// keyCacheSize bounds the keys (with their accounts) and the verified tokens
// kept in memory; more are evicted least recently used first.
const keyCacheSize = 10000

type cachedKey struct {
	key     *domain.APIKey
	account *domain.Account
	fetched time.Time
}

// keyCache keeps keys and their accounts read by Authenticate for a TTL.
// Freshness is judged on the service's clock; the LRU's size bounds the
// memory, so a stale entry needs no timer of its own to be freed (an
// expiring LRU would run a goroutine per cache for nothing).
type keyCache struct {
	ttl   time.Duration
	clock domain.Clock
	keys  *lru.Cache[string, cachedKey] // nil when ttl is 0
	reads singleflight.Group

	mu sync.Mutex
	// changes counts invalidations, so that a read which raced with a
	// revocation is not cached as if it were current.
	changes uint64
}

func newKeyCache(ttl time.Duration, clock domain.Clock) *keyCache {
	c := &keyCache{ttl: ttl, clock: clock}
	if ttl > 0 {
		c.keys, _ = lru.New[string, cachedKey](keyCacheSize) // errs only on a size <= 0
	}
	return c
}

// get returns the cached key when it was read less than the TTL ago, and
// the generation a read made now must be stored with.
func (c *keyCache) get(keyID string) (cachedKey, uint64, bool) {
	if c.keys == nil {
		return cachedKey{}, 0, false
	}
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.keys.Get(keyID)
	changes := c.changes
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < c.ttl && now.Sub(e.fetched) >= 0 {
		return e, changes, true
	}
	return cachedKey{}, changes, false
}

// put stores a key read since get returned changes, unless the cache was
// invalidated in between.
func (c *keyCache) put(keyID string, e cachedKey, changes uint64) {
	if c.keys == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changes == changes {
		c.keys.Add(keyID, e)
	}
}

// forget drops the cached keys for which drop is true.
func (c *keyCache) forget(drop func(keyID string, e cachedKey) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	if c.keys == nil {
		return
	}
	for _, id := range c.keys.Keys() {
		if e, ok := c.keys.Peek(id); ok && drop(id, e) {
			c.keys.Remove(id)
		}
	}
}

// newVerifiedTokens is the LRU of tokens whose signature checked out, by
// their SHA-256.
func newVerifiedTokens() *lru.Cache[[32]byte, verifiedToken] {
	c, err := lru.New[[32]byte, verifiedToken](keyCacheSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
}
