package bench

import (
	"math"
	"math/bits"
	"time"
)

// histSubBits sets the precision: values below 1<<histSubBits are exact and
// every power of two above is cut into 1<<(histSubBits-1) linear buckets, so a
// recorded value is off by at most 1/64 (about 1.6%), as in HdrHistogram.
const (
	histSubBits  = 7
	histSubCount = 1 << histSubBits
	histHalf     = histSubCount / 2
	histBuckets  = (63-histSubBits)*histHalf + histSubCount // durations are int64
)

// Histogram records durations in log-linear buckets: fixed memory (about
// 30 KiB) whatever the run length, mergeable across workers. Not safe for
// concurrent use; give each worker its own and Merge them.
type Histogram struct {
	counts   [histBuckets]uint64
	total    uint64
	sum      time.Duration
	min, max time.Duration
}

// Record adds one duration (negative ones count as zero).
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(uint64(d))]++
	if h.total == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.total++
	h.sum += d
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.total += o.total
	h.sum += o.sum
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Mean is the exact mean of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return h.sum / time.Duration(h.total)
}

// Max is the exact largest recorded value.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the value at quantile q (0..1): the upper bound of the
// bucket holding the ceil(q*n)-th smallest value, clamped to the exact
// maximum, so it never understates a latency by more than the bucket width.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(histUpper(i)), h.max)
		}
	}
	return h.max
}

func histIndex(v uint64) int {
	if v < histSubCount {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits
	return shift*histHalf + int(v>>shift)
}

// histUpper is the largest value that lands in bucket i.
func histUpper(i int) uint64 {
	if i < histSubCount {
		return uint64(i)
	}
	shift := i/histHalf - 1
	m := uint64(i - shift*histHalf)
	return (m+1)<<shift - 1
}
