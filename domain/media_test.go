package domain

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/rules"
)

func mediaMs(v int64) *int64 { return &v }

func TestMediaFormatTimecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{0, "00:00:00.000"},
		{1, "00:00:00.001"},
		{999, "00:00:00.999"},
		{1000, "00:00:01.000"},
		{59_999, "00:00:59.999"},
		{60_000, "00:01:00.000"},
		{3_599_999, "00:59:59.999"},
		{3_600_000, "01:00:00.000"},
		{4*3_600_000 + 5*60_000 + 6_007, "04:05:06.007"},
		{100 * 3_600_000, "100:00:00.000"},
		{-5, "00:00:00.000"},
	} {
		require.Equal(t, tc.want, FormatTimecode(tc.ms), "ms=%d", tc.ms)
	}
}

func TestMediaTrueLabels(t *testing.T) {
	t.Parallel()
	require.Nil(t, TrueLabels(nil))
	tr := &rules.TimeRange{StartMs: 10, EndMs: 20}
	spans := []rules.TextSpan{{Start: 0, End: 4, Text: "kill", Transcript: tr}, {Start: 5, End: 8, Text: "you", Transcript: tr}}
	rep := &rules.Report{Sections: []rules.SectionReport{
		{Name: "A", Result: rules.OutcomeTrue, Score: 0.9, Assertions: []rules.AssertionReport{
			{Result: rules.OutcomeTrue, Spans: &[]rules.TextSpan{spans[1]}}, {Result: rules.OutcomeTrue, Spans: &spans},
		}},
		{Name: "B", Result: rules.OutcomeFalse, Score: 0.2},
		{Name: "C", Result: rules.OutcomeFailed, Score: -1},
		{Name: "D", Result: rules.OutcomeTrue, Score: 0.5},
	}}
	// A label's spans are its rules' together, in text order, each once.
	require.Equal(t, []ScoredLabel{{Label: "A", Score: 0.9, Spans: spans}, {Label: "D", Score: 0.5}}, TrueLabels(rep))
}

var (
	hitViolence = ScoredLabel{Label: "Violence", Score: 1}
	hitKnown    = ScoredLabel{Label: "KnownBad", Score: 0.75}
	hitSpam     = ScoredLabel{Label: "Spam", Score: 0.6}
)

// mediaSeg and mediaChunk keep the tables short.
func mediaSeg(s, e int64) FrameSegment { return FrameSegment{StartMs: s, EndMs: e} }
func mediaChunk(s, e int64) TranscriptChunk {
	return TranscriptChunk{StartMs: s, EndMs: e, Text: fmt.Sprintf("%d-%d", s, e)}
}

// frameHit is the expected point-in-time frame hit of a segment.
func mediaFrameHit(l ScoredLabel, s FrameSegment) TimedHit {
	return TimedHit{Label: l.Label, Kind: MediaVideo, Score: l.Score, StartMs: s.StartMs,
		FrameStartMs: mediaMs(s.StartMs), FrameEndMs: mediaMs(s.EndMs)}
}

// textHit is the expected ranged hit of a chunk in a segment.
func mediaTextHit(l ScoredLabel, start int64, end *int64, s FrameSegment, c TranscriptChunk) TimedHit {
	return TimedHit{Label: l.Label, Kind: MediaVideo, Score: l.Score, StartMs: start, EndMs: end,
		FrameStartMs: mediaMs(s.StartMs), FrameEndMs: mediaMs(s.EndMs),
		TranscriptStartMs: mediaMs(c.StartMs), TranscriptEndMs: mediaMs(c.EndMs)}
}

func TestMediaVideoHits(t *testing.T) {
	t.Parallel()
	s0, s1, s2 := mediaSeg(0, 2000), mediaSeg(2000, 4000), mediaSeg(4000, 5600)
	three := func(l0, l1, l2 []ScoredLabel) []FrameLabels {
		return []FrameLabels{{s0, l0}, {s1, l1}, {s2, l2}}
	}
	for _, tc := range []struct {
		name   string
		frames []FrameLabels
		chunks []ChunkLabels
		want   []TimedHit
	}{
		{name: "nothing hit", frames: three(nil, nil, nil), chunks: []ChunkLabels{{mediaChunk(0, 1000), nil}}},
		{
			name:   "frame hit is point-in-time at its segment start, no end, no transcript",
			frames: three(nil, []ScoredLabel{hitKnown}, nil),
			want:   []TimedHit{mediaFrameHit(hitKnown, s1)},
		},
		{
			name:   "chunk inside one segment: occurrence is the chunk",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(500, 1500), []ScoredLabel{hitViolence}}},
			want:   []TimedHit{mediaTextHit(hitViolence, 500, mediaMs(1500), s0, mediaChunk(500, 1500))},
		},
		{
			name:   "chunk across a cut: one occurrence per segment, each the overlap",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(1500, 3000), []ScoredLabel{hitViolence}}},
			want: []TimedHit{
				mediaTextHit(hitViolence, 1500, mediaMs(2000), s0, mediaChunk(1500, 3000)),
				mediaTextHit(hitViolence, 2000, mediaMs(3000), s1, mediaChunk(1500, 3000)),
			},
		},
		{
			name:   "chunk across two cuts covers the middle segment whole",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(1000, 5000), []ScoredLabel{hitViolence}}},
			want: []TimedHit{
				mediaTextHit(hitViolence, 1000, mediaMs(2000), s0, mediaChunk(1000, 5000)),
				mediaTextHit(hitViolence, 2000, mediaMs(4000), s1, mediaChunk(1000, 5000)),
				mediaTextHit(hitViolence, 4000, mediaMs(5000), s2, mediaChunk(1000, 5000)),
			},
		},
		{
			name:   "chunk ending exactly at a cut does not touch the next segment",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(1000, 2000), []ScoredLabel{hitViolence}}},
			want:   []TimedHit{mediaTextHit(hitViolence, 1000, mediaMs(2000), s0, mediaChunk(1000, 2000))},
		},
		{
			name:   "chunk starting exactly at a cut belongs to the later segment",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(2000, 2500), []ScoredLabel{hitViolence}}},
			want:   []TimedHit{mediaTextHit(hitViolence, 2000, mediaMs(2500), s1, mediaChunk(2000, 2500))},
		},
		{
			name:   "point cue is a point-in-time transcript hit in its segment",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(2000, 2000), []ScoredLabel{hitViolence}}},
			want:   []TimedHit{mediaTextHit(hitViolence, 2000, nil, s1, mediaChunk(2000, 2000))},
		},
		{
			name:   "point cue at the very end belongs to the last segment",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(5600, 5600), []ScoredLabel{hitViolence}}},
			want:   []TimedHit{mediaTextHit(hitViolence, 5600, nil, s2, mediaChunk(5600, 5600))},
		},
		{
			name:   "chunk past the end of the picture keeps its hit without frame fields",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(6000, 7000), []ScoredLabel{hitViolence}}},
			want: []TimedHit{{Label: "Violence", Kind: MediaVideo, Score: 1, StartMs: 6000, EndMs: mediaMs(7000),
				TranscriptStartMs: mediaMs(6000), TranscriptEndMs: mediaMs(7000)}},
		},
		{
			name:   "chunk running past the end is clipped to the last segment",
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{{mediaChunk(5000, 7000), []ScoredLabel{hitViolence}}},
			want:   []TimedHit{mediaTextHit(hitViolence, 5000, mediaMs(5600), s2, mediaChunk(5000, 7000))},
		},
		{
			name:   "frame and transcript hits interleave by start; point-in-time first at equal start",
			frames: three([]ScoredLabel{hitKnown}, []ScoredLabel{hitKnown}, nil),
			chunks: []ChunkLabels{
				{mediaChunk(0, 1000), []ScoredLabel{hitViolence}},
				{mediaChunk(1500, 2500), []ScoredLabel{hitViolence, hitSpam}},
			},
			want: []TimedHit{
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
			frames: three(nil, nil, nil),
			chunks: []ChunkLabels{
				{mediaChunk(100, 1900), []ScoredLabel{hitSpam}},
				{mediaChunk(100, 600), []ScoredLabel{hitViolence}},
			},
			want: []TimedHit{
				mediaTextHit(hitViolence, 100, mediaMs(600), s0, mediaChunk(100, 600)),
				mediaTextHit(hitSpam, 100, mediaMs(1900), s0, mediaChunk(100, 1900)),
			},
		},
		{
			name:   "several labels of one frame keep document order",
			frames: three(nil, nil, []ScoredLabel{hitSpam, hitKnown}),
			want:   []TimedHit{mediaFrameHit(hitSpam, s2), mediaFrameHit(hitKnown, s2)},
		},
		{
			name:   "overlapping cues each produce their hits",
			frames: []FrameLabels{{mediaSeg(0, 10_000), nil}},
			chunks: []ChunkLabels{
				{mediaChunk(1000, 4000), []ScoredLabel{hitViolence}},
				{mediaChunk(2000, 3000), []ScoredLabel{hitViolence}},
			},
			want: []TimedHit{
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
		chunks []ChunkLabels
		want   []TimedHit
	}{
		{name: "no chunks"},
		{name: "no labels", chunks: []ChunkLabels{{mediaChunk(0, 1000), nil}}},
		{
			name:   "chunk hit has the chunk start and end, nothing else",
			chunks: []ChunkLabels{{mediaChunk(1500, 9800), []ScoredLabel{hitViolence, hitSpam}}},
			want: []TimedHit{
				{Label: "Violence", Kind: MediaAudio, Score: 1, StartMs: 1500, EndMs: mediaMs(9800)},
				{Label: "Spam", Kind: MediaAudio, Score: 0.6, StartMs: 1500, EndMs: mediaMs(9800)},
			},
		},
		{
			name:   "zero-length chunk has no end bound",
			chunks: []ChunkLabels{{mediaChunk(700, 700), []ScoredLabel{hitViolence}}},
			want:   []TimedHit{{Label: "Violence", Kind: MediaAudio, Score: 1, StartMs: 700}},
		},
		{
			name: "ascending start whatever the chunk order",
			chunks: []ChunkLabels{
				{mediaChunk(20_000, 25_000), []ScoredLabel{hitSpam}},
				{mediaChunk(0, 10_000), []ScoredLabel{hitViolence}},
			},
			want: []TimedHit{
				{Label: "Violence", Kind: MediaAudio, Score: 1, StartMs: 0, EndMs: mediaMs(10_000)},
				{Label: "Spam", Kind: MediaAudio, Score: 0.6, StartMs: 20_000, EndMs: mediaMs(25_000)},
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

func TestMediaError(t *testing.T) {
	t.Parallel()
	cause := errors.New("ffmpeg: moov atom not found")
	err := fmt.Errorf("wrapped: %w", NewMediaError(ReasonVideoValidationFailure, "The submitted media could not be validated or decoded.", cause))
	me, ok := MediaErrorOf(err)
	require.True(t, ok)
	require.Equal(t, JobError{Reason: ReasonVideoValidationFailure, Message: "The submitted media could not be validated or decoded."}, me.JobError())
	require.ErrorIs(t, err, cause)
	_, ok = MediaErrorOf(errors.New("other"))
	require.False(t, ok)
	u := MediaUnavailableError([]string{"ffmpeg", "ffprobe"})
	require.Equal(t, ReasonJobFailed, u.Reason)
	require.Contains(t, u.Message, "ffmpeg")
}

// A transcript hit carries the spans of its chunk's label, on video and audio;
// a frame hit has none.
func TestMediaHitsCarrySpans(t *testing.T) {
	t.Parallel()
	c := mediaChunk(500, 1500)
	spans := []rules.TextSpan{{Start: 2, End: 6, Text: "kill", Transcript: &rules.TimeRange{StartMs: 500, EndMs: 1500}}}
	hit := ScoredLabel{Label: "Violence", Score: 1, Spans: spans}
	video := VideoHits([]FrameLabels{{mediaSeg(0, 1000), []ScoredLabel{hitKnown}}, {mediaSeg(1000, 2000), nil}},
		[]ChunkLabels{{c, []ScoredLabel{hit}}})
	require.Len(t, video, 3)
	require.Nil(t, video[0].Spans) // the frame hit
	require.Equal(t, spans, video[1].Spans)
	require.Equal(t, spans, video[2].Spans)
	audio := AudioHits([]ChunkLabels{{c, []ScoredLabel{hit}}})
	require.Equal(t, spans, audio[0].Spans)
	seq := 0
	require.Equal(t, spans, TimedLabelHits("j", "r", audio, &seq)[0].Spans)
}
