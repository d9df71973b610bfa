package labels

import (
	"testing"

	"github.com/contenteval/contenteval/domain/rules"
	"github.com/stretchr/testify/require"
)

// The report cache keeps the most recently used reports up to its size and
// counts its lookups.
func TestEvaluationCache(t *testing.T) {
	t.Parallel()
	c := newEvaluationCache(2)
	a, b, d := &rules.Report{}, &rules.Report{}, &rules.Report{}
	c.put("a", a)
	c.put("b", b)
	got, ok := c.get("a") // a is now the most recently used
	require.True(t, ok)
	require.Same(t, a, got)
	c.put("d", d)
	_, ok = c.get("b")
	require.False(t, ok, "the least recently used report is evicted")
	got, ok = c.get("d")
	require.True(t, ok)
	require.Same(t, d, got)
	_, ok = c.get("a")
	require.True(t, ok, "a recently used report stays")
	require.Equal(t, int64(3), c.hits.Load())
	require.Equal(t, int64(1), c.misses.Load())

	c.put("a", b)
	got, _ = c.get("a")
	require.Same(t, b, got, "a put replaces the report under its key")

	one := newEvaluationCache(0) // a size below 1 keeps one report
	one.put("a", a)
	_, ok = one.get("a")
	require.True(t, ok)
}
