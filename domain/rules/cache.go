package rules

import (
	"container/list"
	"sync"
)

// Cache holds compiled plans keyed by version id. Versions are immutable, so a plan
// never goes stale; the cache is bounded (least recently used first out) because a
// service may serve many versions. Safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int
	ll      *list.List
	entries map[string]*list.Element
	// inflight de-duplicates concurrent compilations of the same version, so a burst of
	// requests for a new version compiles it once.
	inflight map[string]*inflightCompile
}

type cacheEntry struct {
	id   string
	plan *Plan
}

type inflightCompile struct {
	done chan struct{}
	plan *Plan
	err  error
}

// NewCache returns a cache holding at most max plans (at least 1).
func NewCache(max int) *Cache {
	if max < 1 {
		max = 1
	}
	return &Cache{max: max, ll: list.New(), entries: map[string]*list.Element{}, inflight: map[string]*inflightCompile{}}
}

// Get returns the cached plan for id.
func (c *Cache) Get(id string) (*Plan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*cacheEntry).plan, true
	}
	return nil, false
}

// GetOrCompile returns the cached plan for id, compiling text with opts on a miss. The
// id must identify the text and options (a version id does); compile errors are not
// cached.
func (c *Cache) GetOrCompile(id, text string, opts CompileOptions) (*Plan, error) {
	c.mu.Lock()
	if e, ok := c.entries[id]; ok {
		c.ll.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*cacheEntry).plan, nil
	}
	if f, ok := c.inflight[id]; ok {
		c.mu.Unlock()
		<-f.done
		return f.plan, f.err
	}
	f := &inflightCompile{done: make(chan struct{})}
	c.inflight[id] = f
	c.mu.Unlock()

	f.plan, f.err = Compile(text, opts)

	c.mu.Lock()
	delete(c.inflight, id)
	if f.err == nil {
		c.put(id, f.plan)
	}
	c.mu.Unlock()
	close(f.done)
	return f.plan, f.err
}

// Len returns the number of cached plans.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

func (c *Cache) put(id string, p *Plan) {
	if e, ok := c.entries[id]; ok {
		c.ll.MoveToFront(e)
		e.Value.(*cacheEntry).plan = p
		return
	}
	c.entries[id] = c.ll.PushFront(&cacheEntry{id: id, plan: p})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).id)
	}
}
