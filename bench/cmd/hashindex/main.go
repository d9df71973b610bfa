// Command hashindex measures the PDQ index of the hash lists at scale
// (bench/results/hashlists.md): build time, memory per hash, lookup
// latency, and lookups while a new index is built aside and swapped in.
//
//	go run ./bench/cmd/hashindex -n 10000000 -lists 100
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain/imaging"
)

func main() {
	n := flag.Int("n", 10_000_000, "hashes")
	lists := flag.Int("lists", 100, "lists the hashes are spread over")
	queries := flag.Int("queries", 20000, "lookups per measurement")
	maxDist := flag.Int("distance", 31, "lookup distance (the widest band)")
	flag.Parse()
	if err := run(*n, *lists, *queries, *maxDist); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func entries(n, lists int, seed uint64) []imaging.IndexEntry {
	rng := rand.New(rand.NewPCG(seed, 1))
	names := make([]string, lists)
	for i := range names {
		names[i] = fmt.Sprintf("list-%03d", i)
	}
	out := make([]imaging.IndexEntry, n)
	for i := range out {
		var h imaging.Hash
		for j := 0; j < len(h); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				h[j+k] = byte(v >> (8 * k))
			}
		}
		out[i] = imaging.IndexEntry{Hash: h, List: names[i%lists]}
	}
	return out
}

// queriesFor is half near-duplicates of listed hashes (k <= 20 bits
// flipped) and half random hashes (no match: the costlier case for the
// multi-index, which then probes every table).
func queriesFor(es []imaging.IndexEntry, q int) []imaging.Hash {
	rng := rand.New(rand.NewPCG(99, 2))
	out := make([]imaging.Hash, q)
	for i := range out {
		if i%2 == 0 {
			h := es[rng.IntN(len(es))].Hash
			for range rng.IntN(21) {
				b := rng.IntN(256)
				h[b/8] ^= 1 << (b % 8)
			}
			out[i] = h
			continue
		}
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

func percentiles(d []time.Duration) (p50, p99, maxD time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100], d[len(d)-1]
}

// lookups runs every query and returns the wall-clock and thread-CPU time
// of each.
func lookups(ix *atomic.Pointer[imaging.Index], qs []imaging.Hash, maxDist int) (wall, cpu []time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall, cpu = make([]time.Duration, len(qs)), make([]time.Duration, len(qs))
	for i, q := range qs {
		c0, t0 := threadCPU(), time.Now()
		ix.Load().Within(q, maxDist, func(imaging.Match) bool { return true })
		wall[i], cpu[i] = time.Since(t0), threadCPU()-c0
	}
	return wall, cpu
}

func report(what string, wall, cpu []time.Duration) {
	p50, p99, mx := percentiles(wall)
	c50, c99, cmx := percentiles(cpu)
	fmt.Printf("%s: %d lookups; wall p50 %v, p99 %v, max %v; thread CPU p50 %v, p99 %v, max %v\n", what, len(wall), p50, p99, mx, c50, c99, cmx)
}

func run(n, lists, q, maxDist int) error {
	base := heap()
	es := entries(n, lists, 1)
	qs := queriesFor(es, q)
	t0 := time.Now()
	built, err := imaging.NewIndex(es)
	if err != nil {
		return err
	}
	build := time.Since(t0)
	es = nil
	var ix atomic.Pointer[imaging.Index]
	ix.Store(built)
	built = nil
	inUse := heap() - base
	fmt.Printf("hashes %d, lists %d, strategy %v\n", n, lists, ix.Load().Strategy())
	fmt.Printf("build %.1f s, memory %.1f bytes/hash (heap in use after GC, queries included)\n", build.Seconds(), float64(inUse)/float64(n))

	wall, cpu := lookups(&ix, qs, maxDist)
	report(fmt.Sprintf("lookup (distance <= %d)", maxDist), wall, cpu)

	// Reload: a new index is built aside while lookups go on, then swapped
	// in atomically; lookups never wait for it.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var during, duringCPU []time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			w, c := lookups(&ix, qs[:1000], maxDist)
			during, duringCPU = append(during, w...), append(duringCPU, c...)
		}
	}()
	t1 := time.Now()
	next, err := imaging.NewIndex(entries(n, lists, 2))
	if err != nil {
		return err
	}
	ix.Store(next)
	reload := time.Since(t1)
	close(stop)
	wg.Wait()
	fmt.Printf("reload (build aside, atomic swap) %.1f s\n", reload.Seconds())
	report("lookups during the reload", during, duringCPU)
	return nil
}
