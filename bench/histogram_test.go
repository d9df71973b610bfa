package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBucketsAreContiguous(t *testing.T) {
	for i := 1; i < histBuckets; i++ {
		if lo := histUpper(i-1) + 1; histIndex(lo) != i {
			t.Fatalf("value %d: index %d, want %d", lo, histIndex(lo), i)
		}
	}
	if got := histIndex(1<<63 - 1); got != histBuckets-1 {
		t.Fatalf("largest value: index %d, want %d", got, histBuckets-1)
	}
}

func TestHistogramQuantilesWithinPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h, a, b Histogram
	vals := make([]time.Duration, 0, 10000)
	for i := range 10000 {
		d := time.Duration(r.ExpFloat64() * float64(300*time.Microsecond))
		vals = append(vals, d)
		h.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/64+1 {
			t.Errorf("q%g: got %v, exact %v", q, got, exact)
		}
		if m := a.Quantile(q); m != got {
			t.Errorf("q%g: merged %v, single %v", q, m, got)
		}
	}
	if h.Count() != 10000 || h.Max() != vals[len(vals)-1] || a.Mean() != h.Mean() {
		t.Errorf("count %d max %v mean %v/%v", h.Count(), h.Max(), h.Mean(), a.Mean())
	}
}
