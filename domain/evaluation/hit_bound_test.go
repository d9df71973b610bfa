package evaluation

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// TimedHitBound, fed a video's hits a frame or a chunk at a time, keeps
// exactly what LimitTimedHits keeps of all of them built at once (the
// earliest per label and per item, construction order breaking ties),
// while holding at most twice the item's bound plus one piece.
func TestTimedHitBoundMatchesLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                   string
		segments, chunks, labs int
	}{
		{"within the bounds", 10, 10, 3},
		{"past a label's bound", 400, 0, 2},
		{"past the item's bound", 300, 600, 12},
		{"chunks across every segment", 50, 2000, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			labels := make([]domain.ScoredLabel, tc.labs)
			for i := range labels {
				labels[i] = domain.ScoredLabel{Label: fmt.Sprintf("L%d", i), Score: 1}
			}
			frames := make([]domain.FrameLabels, tc.segments)
			bare := make([]domain.FrameLabels, tc.segments)
			for i := range frames {
				seg := domain.FrameSegment{StartMs: int64(1000 * i), EndMs: int64(1000 * (i + 1))}
				frames[i], bare[i] = domain.FrameLabels{Segment: seg, Labels: labels}, domain.FrameLabels{Segment: seg}
			}
			chunks := make([]domain.ChunkLabels, tc.chunks)
			for i := range chunks {
				// Overlapping chunks, some of them points, some past the end.
				start := int64(i * 700 % (1000*tc.segments + 2000))
				chunks[i] = domain.ChunkLabels{Chunk: domain.TranscriptChunk{StartMs: start, EndMs: start + int64(i%3)*900}, Labels: labels[i%2:]}
			}
			want, wantCut := LimitTimedHits(VideoHits(frames, chunks))

			var b TimedHitBound
			largest := 0
			for i := range frames {
				piece := VideoHits(frames[i:i+1], nil)
				largest = max(largest, len(piece))
				b.Add(piece)
			}
			for i := range chunks {
				piece := VideoHits(bare, chunks[i:i+1])
				largest = max(largest, len(piece))
				b.Add(piece)
			}
			got, cut := b.Hits()
			require.Equal(t, wantCut, cut)
			require.Equal(t, want, got)
			require.LessOrEqual(t, b.Peak(), 2*domain.MaxTimedHitsPerItem+largest)
		})
	}
}
