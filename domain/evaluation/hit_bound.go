package evaluation

import (
	"sort"

	"github.com/contenteval/contenteval/domain"
)

// TimedHitBound keeps the timed hits of one item within the bounds while
// they are produced, so that a video whose every frame hits every label
// holds a bounded number of hits, not one per label per frame until the
// end. Hits are added a piece at a time (a frame's or a chunk's, as
// VideoHits and AudioHits build them: in hit order), pieces in the order of
// construction VideoHits follows (frames, then chunks, each in timeline
// order); Hits then returns exactly what LimitTimedHits returns for all of
// them built at once.
//
// Whenever more than twice domain.MaxTimedHitsPerItem are held, they are sorted
// and limited. A hit left out then could never be kept in the end: those
// that passed before it stay ahead of it or give way only to hits that
// come before them, of the same label, so its label's bound or the item's
// keeps excluding it; and a hit left out never changes whether another
// one is kept (only earlier hits count toward a later one's bounds).
type TimedHitBound struct {
	held []domain.TimedHit
	cut  bool
	peak int
}

// Add adds one piece of hits, in hit order.
func (b *TimedHitBound) Add(piece []domain.TimedHit) {
	b.held = append(b.held, piece...)
	b.peak = max(b.peak, len(b.held))
	if len(b.held) > 2*domain.MaxTimedHitsPerItem {
		b.limit()
	}
}

// limit sorts the held hits (stably: construction order breaks ties, as in
// VideoHits) and keeps those within the bounds.
func (b *TimedHitBound) limit() {
	sort.SliceStable(b.held, func(i, j int) bool { return timedHitBefore(b.held[i], b.held[j]) })
	var cut bool
	b.held, cut = LimitTimedHits(b.held)
	b.cut = b.cut || cut
}

// Hits returns the hits within the bounds, in hit order, and whether any
// were left out.
func (b *TimedHitBound) Hits() ([]domain.TimedHit, bool) {
	b.limit()
	return b.held, b.cut
}

// Peak returns the most hits held at once.
func (b *TimedHitBound) Peak() int { return b.peak }

// timedHitBefore is the hit order of docs/api.md#timed-media: by start,
// point-in-time before ranged, then by end.
func timedHitBefore(a, b domain.TimedHit) bool {
	if a.StartMs != b.StartMs {
		return a.StartMs < b.StartMs
	}
	if (a.EndMs == nil) != (b.EndMs == nil) {
		return a.EndMs == nil
	}
	return a.EndMs != nil && *a.EndMs < *b.EndMs
}
