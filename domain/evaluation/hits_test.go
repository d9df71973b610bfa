package evaluation

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"

	"github.com/contenteval/contenteval/domain/rules"
)

func mediaMs(v int64) *int64 { return &v }

var (
	hitViolence = domain.ScoredLabel{Label: "Violence", Score: 1}
	hitKnown    = domain.ScoredLabel{Label: "KnownBad", Score: 0.75}
	hitSpam     = domain.ScoredLabel{Label: "Spam", Score: 0.6}
)

func mediaSeg(s, e int64) domain.FrameSegment { return domain.FrameSegment{StartMs: s, EndMs: e} }
func mediaChunk(s, e int64) domain.TranscriptChunk {
	return domain.TranscriptChunk{StartMs: s, EndMs: e, Text: fmt.Sprintf("%d-%d", s, e)}
}

// frameHit is the expected point-in-time frame hit of a segment.
func mediaFrameHit(l domain.ScoredLabel, s domain.FrameSegment) domain.TimedHit {
	return domain.TimedHit{Label: l.Label, Kind: domain.MediaVideo, Score: l.Score, StartMs: s.StartMs,
		FrameStartMs: mediaMs(s.StartMs), FrameEndMs: mediaMs(s.EndMs)}
}

// textHit is the expected ranged hit of a chunk in a segment.
func mediaTextHit(l domain.ScoredLabel, start int64, end *int64, s domain.FrameSegment, c domain.TranscriptChunk) domain.TimedHit {
	return domain.TimedHit{Label: l.Label, Kind: domain.MediaVideo, Score: l.Score, StartMs: start, EndMs: end,
		FrameStartMs: mediaMs(s.StartMs), FrameEndMs: mediaMs(s.EndMs),
		TranscriptStartMs: mediaMs(c.StartMs), TranscriptEndMs: mediaMs(c.EndMs)}
}

// videoSegs are the three scenes of the video of the hit tests.
var videoSegs = []domain.FrameSegment{mediaSeg(0, 2000), mediaSeg(2000, 4000), mediaSeg(4000, 5600)}

// threeSegs are the labels of the frames of videoSegs.
func threeSegs(l0, l1, l2 []domain.ScoredLabel) []domain.FrameLabels {
	return []domain.FrameLabels{{Segment: videoSegs[0], Labels: l0}, {Segment: videoSegs[1], Labels: l1}, {Segment: videoSegs[2], Labels: l2}}
}

// videoHitsCase is a video's frame and chunk labels and the hits they make.
type videoHitsCase struct {
	name   string
	frames []domain.FrameLabels
	chunks []domain.ChunkLabels
	want   []domain.TimedHit
}

func TestMediaVideoHits(t *testing.T) {
	t.Parallel()
	s0, s1, s2 := videoSegs[0], videoSegs[1], videoSegs[2]
	for _, tc := range []videoHitsCase{
		{name: "nothing hit", frames: threeSegs(nil, nil, nil), chunks: []domain.ChunkLabels{{Chunk: mediaChunk(0, 1000), Labels: nil}}},
		{
			name:   "frame hit is point-in-time at its segment start, no end, no transcript",
			frames: threeSegs(nil, []domain.ScoredLabel{hitKnown}, nil),
			want:   []domain.TimedHit{mediaFrameHit(hitKnown, s1)},
		},
		{
			name:   "chunk inside one segment: occurrence is the chunk",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(500, 1500), Labels: []domain.ScoredLabel{hitViolence}}},
			want:   []domain.TimedHit{mediaTextHit(hitViolence, 500, mediaMs(1500), s0, mediaChunk(500, 1500))},
		},
		{
			name:   "chunk across a cut: one occurrence per segment, each the overlap",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(1500, 3000), Labels: []domain.ScoredLabel{hitViolence}}},
			want: []domain.TimedHit{
				mediaTextHit(hitViolence, 1500, mediaMs(2000), s0, mediaChunk(1500, 3000)),
				mediaTextHit(hitViolence, 2000, mediaMs(3000), s1, mediaChunk(1500, 3000)),
			},
		},
		{
			name:   "chunk across two cuts covers the middle segment whole",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(1000, 5000), Labels: []domain.ScoredLabel{hitViolence}}},
			want: []domain.TimedHit{
				mediaTextHit(hitViolence, 1000, mediaMs(2000), s0, mediaChunk(1000, 5000)),
				mediaTextHit(hitViolence, 2000, mediaMs(4000), s1, mediaChunk(1000, 5000)),
				mediaTextHit(hitViolence, 4000, mediaMs(5000), s2, mediaChunk(1000, 5000)),
			},
		},
		{
			name:   "chunk ending exactly at a cut does not touch the next segment",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(1000, 2000), Labels: []domain.ScoredLabel{hitViolence}}},
			want:   []domain.TimedHit{mediaTextHit(hitViolence, 1000, mediaMs(2000), s0, mediaChunk(1000, 2000))},
		},
		{
			name:   "chunk starting exactly at a cut belongs to the later segment",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(2000, 2500), Labels: []domain.ScoredLabel{hitViolence}}},
			want:   []domain.TimedHit{mediaTextHit(hitViolence, 2000, mediaMs(2500), s1, mediaChunk(2000, 2500))},
		},
		{
			name:   "point cue is a point-in-time transcript hit in its segment",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(2000, 2000), Labels: []domain.ScoredLabel{hitViolence}}},
			want:   []domain.TimedHit{mediaTextHit(hitViolence, 2000, nil, s1, mediaChunk(2000, 2000))},
		},
		{
			name:   "point cue at the very end belongs to the last segment",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(5600, 5600), Labels: []domain.ScoredLabel{hitViolence}}},
			want:   []domain.TimedHit{mediaTextHit(hitViolence, 5600, nil, s2, mediaChunk(5600, 5600))},
		},
		{
			name:   "chunk past the end of the picture keeps its hit without frame fields",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(6000, 7000), Labels: []domain.ScoredLabel{hitViolence}}},
			want: []domain.TimedHit{{Label: "Violence", Kind: domain.MediaVideo, Score: 1, StartMs: 6000, EndMs: mediaMs(7000),
				TranscriptStartMs: mediaMs(6000), TranscriptEndMs: mediaMs(7000)}},
		},
		{
			name:   "chunk running past the end is clipped to the last segment",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(5000, 7000), Labels: []domain.ScoredLabel{hitViolence}}},
			want:   []domain.TimedHit{mediaTextHit(hitViolence, 5000, mediaMs(5600), s2, mediaChunk(5000, 7000))},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, VideoHits(tc.frames, tc.chunks))
		})
	}
}

// Hits are ordered by start, point-in-time first, then shorter ranges,
// then construction order.
func TestMediaVideoHitsOrder(t *testing.T) {
	t.Parallel()
	s0, s1, s2 := videoSegs[0], videoSegs[1], videoSegs[2]
	for _, tc := range []videoHitsCase{
		{
			name:   "frame and transcript hits interleave by start; point-in-time first at equal start",
			frames: threeSegs([]domain.ScoredLabel{hitKnown}, []domain.ScoredLabel{hitKnown}, nil),
			chunks: []domain.ChunkLabels{
				{Chunk: mediaChunk(0, 1000), Labels: []domain.ScoredLabel{hitViolence}},
				{Chunk: mediaChunk(1500, 2500), Labels: []domain.ScoredLabel{hitViolence, hitSpam}},
			},
			want: []domain.TimedHit{
				mediaFrameHit(hitKnown, s0),
				mediaTextHit(hitViolence, 0, mediaMs(1000), s0, mediaChunk(0, 1000)),
				mediaTextHit(hitViolence, 1500, mediaMs(2000), s0, mediaChunk(1500, 2500)),
				mediaTextHit(hitSpam, 1500, mediaMs(2000), s0, mediaChunk(1500, 2500)),
				mediaFrameHit(hitKnown, s1),
				mediaTextHit(hitViolence, 2000, mediaMs(2500), s1, mediaChunk(1500, 2500)),
				mediaTextHit(hitSpam, 2000, mediaMs(2500), s1, mediaChunk(1500, 2500)),
			},
		},
		{
			name:   "at equal starts shorter ranges come first",
			frames: threeSegs(nil, nil, nil),
			chunks: []domain.ChunkLabels{
				{Chunk: mediaChunk(100, 1900), Labels: []domain.ScoredLabel{hitSpam}},
				{Chunk: mediaChunk(100, 600), Labels: []domain.ScoredLabel{hitViolence}},
			},
			want: []domain.TimedHit{
				mediaTextHit(hitViolence, 100, mediaMs(600), s0, mediaChunk(100, 600)),
				mediaTextHit(hitSpam, 100, mediaMs(1900), s0, mediaChunk(100, 1900)),
			},
		},
		{
			name:   "several labels of one frame keep document order",
			frames: threeSegs(nil, nil, []domain.ScoredLabel{hitSpam, hitKnown}),
			want:   []domain.TimedHit{mediaFrameHit(hitSpam, s2), mediaFrameHit(hitKnown, s2)},
		},
		{
			name:   "overlapping cues each produce their hits",
			frames: []domain.FrameLabels{{Segment: mediaSeg(0, 10_000), Labels: nil}},
			chunks: []domain.ChunkLabels{
				{Chunk: mediaChunk(1000, 4000), Labels: []domain.ScoredLabel{hitViolence}},
				{Chunk: mediaChunk(2000, 3000), Labels: []domain.ScoredLabel{hitViolence}},
			},
			want: []domain.TimedHit{
				mediaTextHit(hitViolence, 1000, mediaMs(4000), mediaSeg(0, 10_000), mediaChunk(1000, 4000)),
				mediaTextHit(hitViolence, 2000, mediaMs(3000), mediaSeg(0, 10_000), mediaChunk(2000, 3000)),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, VideoHits(tc.frames, tc.chunks))
		})
	}
}

func TestMediaAudioHits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		chunks []domain.ChunkLabels
		want   []domain.TimedHit
	}{
		{name: "no chunks"},
		{name: "no labels", chunks: []domain.ChunkLabels{{Chunk: mediaChunk(0, 1000), Labels: nil}}},
		{
			name:   "chunk hit has the chunk start and end, nothing else",
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(1500, 9800), Labels: []domain.ScoredLabel{hitViolence, hitSpam}}},
			want: []domain.TimedHit{
				{Label: "Violence", Kind: domain.MediaAudio, Score: 1, StartMs: 1500, EndMs: mediaMs(9800)},
				{Label: "Spam", Kind: domain.MediaAudio, Score: 0.6, StartMs: 1500, EndMs: mediaMs(9800)},
			},
		},
		{
			name:   "zero-length chunk has no end bound",
			chunks: []domain.ChunkLabels{{Chunk: mediaChunk(700, 700), Labels: []domain.ScoredLabel{hitViolence}}},
			want:   []domain.TimedHit{{Label: "Violence", Kind: domain.MediaAudio, Score: 1, StartMs: 700}},
		},
		{
			name: "ascending start whatever the chunk order",
			chunks: []domain.ChunkLabels{
				{Chunk: mediaChunk(20_000, 25_000), Labels: []domain.ScoredLabel{hitSpam}},
				{Chunk: mediaChunk(0, 10_000), Labels: []domain.ScoredLabel{hitViolence}},
			},
			want: []domain.TimedHit{
				{Label: "Violence", Kind: domain.MediaAudio, Score: 1, StartMs: 0, EndMs: mediaMs(10_000)},
				{Label: "Spam", Kind: domain.MediaAudio, Score: 0.6, StartMs: 20_000, EndMs: mediaMs(25_000)},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, AudioHits(tc.chunks))
		})
	}
}

func TestMediaMergeReports(t *testing.T) {
	t.Parallel()
	require.Nil(t, MergeReports(nil))
	sec := func(name string, o rules.Outcome, score float64) rules.SectionReport {
		return rules.SectionReport{Name: name, Result: o, Score: score}
	}
	frame := &rules.Report{Threshold: 0.5, Sections: []rules.SectionReport{
		sec("Text", rules.OutcomeFailed, -1), sec("Hash", rules.OutcomeTrue, 0.7), sec("Other", rules.OutcomeFailed, -1),
	}, TokenUsage: rules.TokenUsage{InputTokens: 1, BilledTokens: 2, Multiplier: 1}}
	chunk1 := &rules.Report{Threshold: 0.5, Sections: []rules.SectionReport{
		sec("Text", rules.OutcomeFalse, 0.2), sec("Hash", rules.OutcomeFailed, -1), sec("Other", rules.OutcomeFailed, -1),
	}, TokenUsage: rules.TokenUsage{InputTokens: 10, BilledTokens: 20, Multiplier: 1.5}}
	chunk2 := &rules.Report{Threshold: 0.5, Sections: []rules.SectionReport{
		sec("Text", rules.OutcomeTrue, 0.8), sec("Hash", rules.OutcomeFailed, -1), sec("Other", rules.OutcomeFailed, -1),
	}}
	got := MergeReports([]*rules.Report{frame, chunk1, chunk2})
	require.Equal(t, &rules.Report{
		Result:    rules.OutcomeTrue,
		Threshold: 0.5,
		Sections: []rules.SectionReport{
			sec("Text", rules.OutcomeTrue, 0.8), sec("Hash", rules.OutcomeTrue, 0.7), sec("Other", rules.OutcomeFailed, -1),
		},
		LabelMatches: map[string]float64{"Text": 0.8, "Hash": 0.7},
		TokenUsage:   rules.TokenUsage{InputTokens: 11, BilledTokens: 22, Multiplier: 1.5},
	}, got)

	// Nothing TRUE: a FALSE evaluation beats a FAILED one; any FAILED
	// section left makes the document FAILED.
	got = MergeReports([]*rules.Report{frame, chunk1})
	require.Equal(t, rules.OutcomeTrue, got.Result) // Hash is TRUE in the frame
	got = MergeReports([]*rules.Report{chunk1})
	require.Equal(t, rules.OutcomeFailed, got.Result)
	require.Equal(t, sec("Text", rules.OutcomeFalse, 0.2), got.Sections[0])
	allFalse := &rules.Report{Sections: []rules.SectionReport{sec("Text", rules.OutcomeFalse, 0.1)}}
	require.Equal(t, rules.OutcomeFalse, MergeReports([]*rules.Report{nil, allFalse}).Result)
}

// A transcript hit carries the spans of its chunk's label, on video and audio;
// a frame hit has none.
func TestMediaHitsCarrySpans(t *testing.T) {
	t.Parallel()
	c := mediaChunk(500, 1500)
	spans := []rules.TextSpan{{Start: 2, End: 6, Text: "kill", Transcript: &rules.TimeRange{StartMs: 500, EndMs: 1500}}}
	hit := domain.ScoredLabel{Label: "Violence", Score: 1, Spans: spans}
	video := VideoHits([]domain.FrameLabels{{Segment: mediaSeg(0, 1000), Labels: []domain.ScoredLabel{hitKnown}}, {Segment: mediaSeg(1000, 2000), Labels: nil}},
		[]domain.ChunkLabels{{Chunk: c, Labels: []domain.ScoredLabel{hit}}})
	require.Len(t, video, 3)
	require.Nil(t, video[0].Spans) // the frame hit
	require.Equal(t, spans, video[1].Spans)
	require.Equal(t, spans, video[2].Spans)
	audio := AudioHits([]domain.ChunkLabels{{Chunk: c, Labels: []domain.ScoredLabel{hit}}})
	require.Equal(t, spans, audio[0].Spans)
	seq := 0
	require.Equal(t, spans, TimedLabelHits("j", "r", audio, &seq)[0].Spans)
}
