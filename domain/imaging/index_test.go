package imaging

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

func randomHash(rng *rand.Rand) Hash {
	var h Hash
	for i := range h {
		h[i] = byte(rng.Uint32())
	}
	return h
}

// flipBits returns h with k distinct random bits flipped.
func flipBits(rng *rand.Rand, h Hash, k int) Hash {
	for _, b := range rng.Perm(256)[:k] {
		h[b/8] ^= 1 << (b % 8)
	}
	return h
}

func randomEntries(rng *rand.Rand, n int) []IndexEntry {
	entries := make([]IndexEntry, n)
	for i := range entries {
		entries[i] = IndexEntry{Hash: randomHash(rng), List: fmt.Sprintf("list-%d", i%3)}
	}
	return entries
}

func bruteNearest(entries []IndexEntry, q Hash, maxDist int) (int, bool) {
	best := maxDist + 1
	for _, e := range entries {
		best = min(best, e.Hash.Distance(q))
	}
	return best, best <= maxDist
}

// TestIndexMatchesBruteForce checks both strategies against a brute-force
// scan, on random queries and on queries planted near list hashes at every
// distance around the band edges, including clusters of near-identical
// hashes such as real lists have.
func TestIndexMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	entries := randomEntries(rng, 5000)
	// A cluster: variants of one hash, to put many hashes in one bucket.
	base := randomHash(rng)
	for range 300 {
		entries = append(entries, IndexEntry{Hash: flipBits(rng, base, rng.IntN(24)), List: "cluster"})
	}
	entries = append(entries, entries[7]) // an exact duplicate
	var queries []Hash
	for k := range 80 {
		queries = append(queries, flipBits(rng, entries[rng.IntN(len(entries))].Hash, k%48))
	}
	for range 50 {
		queries = append(queries, randomHash(rng))
	}
	queries = append(queries, flipBits(rng, base, 5), flipBits(rng, base, 40))

	for _, s := range []IndexStrategy{StrategyLinear, StrategyMIH} {
		ix, err := NewIndexWithStrategy(entries, s)
		if err != nil {
			t.Fatal(err)
		}
		if ix.Strategy() != s || ix.Len() != len(entries) {
			t.Fatalf("strategy %v len %d", ix.Strategy(), ix.Len())
		}
		for _, maxDist := range []int{0, 10, 15, 16, 20, 31, 32, 47, 70} {
			for qi, q := range queries {
				want, wantOK := bruteNearest(entries, q, maxDist)
				m, ok := ix.Nearest(q, maxDist)
				if ok != wantOK || (ok && (m.Distance != want || m.Hash.Distance(q) != want)) {
					t.Fatalf("strategy %v maxDist %d query %d: got %+v %v, want distance %d %v",
						s, maxDist, qi, m, ok, want, wantOK)
				}
				if ok && m.List == "" {
					t.Fatalf("no list in %+v", m)
				}
			}
		}
	}
}

func TestIndexStrategiesAgreeOnTies(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	entries := randomEntries(rng, 2000)
	lin, _ := NewIndexWithStrategy(entries, StrategyLinear)
	mih, _ := NewIndexWithStrategy(entries, StrategyMIH)
	for range 200 {
		q := flipBits(rng, entries[rng.IntN(len(entries))].Hash, rng.IntN(32))
		a, aok := lin.Nearest(q, 31)
		b, bok := mih.Nearest(q, 31)
		if aok != bok || a.Distance != b.Distance {
			t.Fatalf("linear %+v %v, mih %+v %v", a, aok, b, bok)
		}
	}
}

func TestIndexEdgeCases(t *testing.T) {
	t.Parallel()
	var nilIndex *Index
	if _, ok := nilIndex.Nearest(Hash{}, 31); ok {
		t.Error("nil index matched")
	}
	empty, err := NewIndex(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := empty.Nearest(Hash{}, 256); ok {
		t.Error("empty index matched")
	}
	h := Hash{1, 2, 3}
	ix, _ := NewIndex([]IndexEntry{{Hash: h, List: "a"}})
	if m, ok := ix.Nearest(h, 0); !ok || m.Distance != 0 || m.Hash != h || m.List != "a" {
		t.Errorf("exact: %+v %v", m, ok)
	}
	if _, ok := ix.Nearest(h, -1); ok {
		t.Error("negative maxDist matched")
	}
	if ix.Strategy() != StrategyLinear {
		t.Errorf("auto picked %v for one hash", ix.Strategy())
	}
}

func TestIndexConcurrentReads(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	entries := randomEntries(rng, 3000)
	ix, _ := NewIndexWithStrategy(entries, StrategyMIH)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				e := entries[(g*200+i)%len(entries)]
				if m, ok := ix.Nearest(e.Hash, 31); !ok || m.Distance != 0 {
					t.Errorf("entry not found: %+v", m)
					return
				}
			}
		})
	}
	wg.Wait()
}

// indexBytesPerHash builds an index of n random hashes and returns the
// live heap it added per hash.
func indexBytesPerHash(tb testing.TB, n int, s IndexStrategy) float64 {
	tb.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	entries := randomEntries(rng, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix, err := NewIndexWithStrategy(entries, s)
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Both measurements include the input, which is the caller's; only
	// the index differs.
	runtime.KeepAlive(ix)
	runtime.KeepAlive(entries)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestIndexMemoryPerHash checks the bound of 120 bytes per hash at
// 1,000,000 hashes for both strategies (docs/operations.md#image-precheck-hash-lists;
// the multi-index spends 15 of them on the partner substrings that refuse
// most candidates without reading their hash).
func TestIndexMemoryPerHash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1M-hash indexes")
	}
	// Not parallel: it reads the process-wide heap size.
	for _, s := range []IndexStrategy{StrategyLinear, StrategyMIH} {
		per := indexBytesPerHash(t, 1_000_000, s)
		t.Logf("strategy %v: %.1f bytes per hash at 1M", s, per)
		if per >= 120 {
			t.Errorf("strategy %v: %.1f bytes per hash, want < 120", s, per)
		}
	}
}

// TestIndexWithin checks that both strategies report exactly the hashes
// within the distance, each once, against a brute-force count.
func TestIndexWithin(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	base := randomHash(rng)
	var entries []IndexEntry
	for i := range 3000 {
		h := base
		for range i % 70 {
			b := rng.IntN(256)
			h[b/8] ^= 1 << (b % 8)
		}
		entries = append(entries, IndexEntry{Hash: h, List: fmt.Sprintf("l%d", i%3)})
	}
	for _, s := range []IndexStrategy{StrategyLinear, StrategyMIH} {
		ix, err := NewIndexWithStrategy(entries, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, maxDist := range []int{0, 5, 17, 31, 40, 63, 90} {
			want := 0
			for _, e := range entries {
				if e.Hash.Distance(base) <= maxDist {
					want++
				}
			}
			got := 0
			ix.Within(base, maxDist, func(m Match) bool {
				if m.Distance > maxDist || m.Hash.Distance(base) != m.Distance {
					t.Fatalf("strategy %d: match at %d beyond %d", s, m.Distance, maxDist)
				}
				got++
				return true
			})
			if got != want {
				t.Errorf("strategy %d, distance %d: %d matches, want %d", s, maxDist, got, want)
			}
		}
	}
}
