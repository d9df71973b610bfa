package rules

import (
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Cache holds compiled plans keyed by version id. Versions are immutable, so a plan
// never goes stale; the cache is bounded (least recently used first out) because a
// service may serve many versions. Safe for concurrent use.
type Cache struct {
	plans *lru.Cache[string, *Plan]
	// compiling de-duplicates concurrent compilations of the same version, so a
	// burst of requests for a new version compiles it once.
	compiling singleflight.Group
}

// NewCache returns a cache holding at most size plans (at least 1).
func NewCache(size int) *Cache {
	plans, err := lru.New[string, *Plan](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1, excluded above
	}
	return &Cache{plans: plans}
}

// Get returns the cached plan for id.
func (c *Cache) Get(id string) (*Plan, bool) {
	return c.plans.Get(id)
}

// GetOrCompile returns the cached plan for id, compiling text with opts on a miss. The
// id must identify the text and options (a version id does); compile errors are not
// cached.
func (c *Cache) GetOrCompile(id, text string, opts CompileOptions) (*Plan, error) {
	if p, ok := c.plans.Get(id); ok {
		return p, nil
	}
	v, err, _ := c.compiling.Do(id, func() (any, error) {
		// A compilation that finished between the miss above and this flight
		// has already stored its plan.
		if p, ok := c.plans.Get(id); ok {
			return p, nil
		}
		p, err := Compile(text, opts)
		if err != nil {
			return nil, err
		}
		c.plans.Add(id, p)
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Plan), nil
}

// Len returns the number of cached plans.
func (c *Cache) Len() int {
	return c.plans.Len()
}
