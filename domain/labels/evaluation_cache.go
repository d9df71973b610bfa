package labels

import (
	"sync/atomic"

	"github.com/contenteval/contenteval/domain/rules"
	lru "github.com/hashicorp/golang-lru/v2"
)

// evaluationCache is a bounded LRU of evaluation reports keyed by (content
// hash, version, threshold, options). The version id belongs to one account,
// so the key never matches another account's evaluation. Reports are never
// mutated after evaluation, so sharing them is safe.
type evaluationCache struct {
	reports *lru.Cache[string, *rules.Report]
	hits    atomic.Int64
	misses  atomic.Int64
}

func newEvaluationCache(size int) *evaluationCache {
	reports, err := lru.New[string, *rules.Report](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1, excluded above
	}
	return &evaluationCache{reports: reports}
}

func (c *evaluationCache) get(key string) (*rules.Report, bool) {
	rep, ok := c.reports.Get(key)
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return rep, ok
}

func (c *evaluationCache) put(key string, rep *rules.Report) {
	c.reports.Add(key, rep)
}
