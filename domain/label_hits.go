package domain

import (
	"context"
)

// Label hit page sizes (docs/api.md#paging).
const (
	DefaultLabelHitPageSize = 1000
	MaxLabelHitPageSize     = 1000
)

// LabelHitRangeStore reads a job's hits by seq range.
type LabelHitRangeStore interface {
	// ListLabelHitsInRange returns the job's hits with afterSeq < seq <=
	// lastSeq, in seq order.
	ListLabelHitsInRange(ctx context.Context, jobID string, afterSeq, lastSeq int) ([]*LabelHit, error)
	// ListResultHits returns up to limit hits of the job result resultID
	// with seq > afterSeq, in seq order, whatever its job.
	ListResultHits(ctx context.Context, resultID string, afterSeq, limit int) ([]*LabelHit, error)
}

// LabelHitCursor is the keyset position in a job's hits: the last Seq sent.
type LabelHitCursor struct {
	Seq int `json:"s"`
}
