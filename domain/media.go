package domain

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/contenteval/contenteval/domain/rules"
)

// This file holds the timed-media (video and audio) side of the domain
// (DESIGN §8, SPEC.md LabelHit): the shapes a media analyzer works with, the
// failure reasons it reports, and the pure construction of timed label hits.
// The media package (an adapter, like persistence) runs ffmpeg and speech
// recognition and implements MediaAnalyzer; nothing here does I/O.

// The job error reasons of timed media (SPEC.md Errors, DESIGN §8).
const (
	ReasonVideoValidationFailure    JobErrorReason = "JOB_ERROR_REASON_VIDEO_VALIDATION_FAILURE"
	ReasonVideoSceneCeilingExceeded JobErrorReason = "JOB_ERROR_REASON_VIDEO_SCENE_CEILING_EXCEEDED"
	ReasonHLSRemuxTimeoutExhausted  JobErrorReason = "JOB_ERROR_REASON_HLS_REMUX_TIMEOUT_EXHAUSTED"
	ReasonTranscriptArtifactInvalid JobErrorReason = "JOB_ERROR_REASON_TRANSCRIPT_CHUNK_ARTIFACT_INVALID"
	ReasonVideoSourceUnreachable    JobErrorReason = "JOB_ERROR_REASON_VIDEO_SOURCE_UNREACHABLE"
)

// MediaError is a terminal failure of timed-media analysis. Reason and
// Message form the job's JobError (Message is fixed per failure and safe to
// show); Err is the underlying cause for logs only (ffmpeg's stderr tail, a
// network error), never sent to a client.
type MediaError struct {
	Reason  JobErrorReason
	Message string
	Err     error
}

func (e *MediaError) Error() string {
	if e.Err != nil {
		return string(e.Reason) + ": " + e.Message + ": " + e.Err.Error()
	}
	return string(e.Reason) + ": " + e.Message
}

func (e *MediaError) Unwrap() error { return e.Err }

// JobError returns the job's terminal error for e.
func (e *MediaError) JobError() JobError { return JobError{Reason: e.Reason, Message: e.Message} }

// NewMediaError returns a MediaError; cause may be nil.
func NewMediaError(reason JobErrorReason, message string, cause error) *MediaError {
	return &MediaError{Reason: reason, Message: message, Err: cause}
}

// MediaUnavailableError is the failure of a media job on a server where the
// tools it needs (ffmpeg, ffprobe, pocketsphinx) are missing: the job fails
// with JOB_FAILED and a message naming what the operator must install,
// because no more specific reason exists and the client cannot fix it.
func MediaUnavailableError(missing []string) *MediaError {
	return &MediaError{
		Reason:  ReasonJobFailed,
		Message: fmt.Sprintf("Video and audio evaluation is not available on this server: %v not installed.", missing),
	}
}

// MediaErrorOf returns the MediaError err is or wraps.
func MediaErrorOf(err error) (*MediaError, bool) {
	var me *MediaError
	if errors.As(err, &me) {
		return me, true
	}
	return nil, false
}

// MediaKind says whether timed content is video or audio; it decides the
// shape of the hits (SPEC.md LabelHit).
type MediaKind string

// Media kinds.
const (
	MediaVideo MediaKind = "video"
	MediaAudio MediaKind = "audio"
)

// MediaInput is one timed-media content entry (DESIGN §5): exactly one of URL
// and Data is set. Captions, when HasCaptions, is WebVTT text used as the
// transcript instead of speech recognition.
type MediaInput struct {
	Kind        MediaKind
	URL         string
	Data        []byte
	Captions    string
	HasCaptions bool
}

// FrameSegment is one scene of a video: the half-open range [StartMs, EndMs)
// of the timeline. The segments of a video are contiguous and cover it.
type FrameSegment struct {
	StartMs, EndMs int64
}

// TranscriptChunk is one unit of transcript evaluated by the text signals:
// a WebVTT cue, or at most 10 s of recognised speech cut at a word boundary.
// [StartMs, EndMs) is on the media timeline; EndMs >= StartMs.
type TranscriptChunk struct {
	StartMs, EndMs int64
	Text           string
}

// ScoredLabel is one TRUE section of an evaluation: the label that was hit
// and its score.
type ScoredLabel struct {
	Label string
	Score float64
	// Spans are where the label's rules matched the text evaluated (a
	// transcript chunk's); nil for a frame.
	Spans []rules.TextSpan
}

// TrueLabels returns the TRUE sections of a report in document order. Only
// TRUE sections become hits: a FALSE or FAILED section was not hit.
func TrueLabels(r *rules.Report) []ScoredLabel {
	if r == nil {
		return nil
	}
	var out []ScoredLabel
	for _, s := range r.Sections {
		if s.Result == rules.OutcomeTrue {
			out = append(out, ScoredLabel{Label: s.Name, Score: s.Score, Spans: s.FlaggedSpans()})
		}
	}
	return out
}

// FrameLabels are the labels hit by the representative frame of a segment.
type FrameLabels struct {
	Segment FrameSegment
	Labels  []ScoredLabel
}

// ChunkLabels are the labels hit by the text of a transcript chunk.
type ChunkLabels struct {
	Chunk  TranscriptChunk
	Labels []ScoredLabel
}

// TimedHit is one timed occurrence of a label (SPEC.md LabelHit) before it
// is numbered and stored. Nil pointers are absent fields; the timecodes are
// derived from the milliseconds with FormatTimecode whenever they are set.
type TimedHit struct {
	Label             string
	Kind              MediaKind
	Score             float64
	StartMs           int64
	EndMs             *int64
	FrameStartMs      *int64
	FrameEndMs        *int64
	TranscriptStartMs *int64
	TranscriptEndMs   *int64
	Spans             []rules.TextSpan // the chunk's, for a transcript hit
}

// FormatTimecode formats milliseconds as HH:MM:SS.mmm (SPEC.md). Hours do
// not wrap at 24 (a 30-hour offset is 30:00:00.000) and negative values,
// which the pipeline never produces, clamp to zero rather than print a sign
// the format has no room for.
func FormatTimecode(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, ms%1000)
}

func ptr(v int64) *int64 { return &v }

// VideoHits builds the hits of one video from the per-segment frame labels
// and the per-chunk transcript labels, exactly as SPEC.md's LabelHit table
// states:
//
//   - A frame hit (a label hit by a segment's representative frame) is
//     point-in-time: StartMs is the start of its segment — the segment is the
//     occurrence, and its start is stable whichever frame inside it was
//     sampled — and EndMs is absent. FrameStartMs/FrameEndMs are the segment
//     bounds; there is no transcript, so the transcript fields are absent.
//   - A transcript hit (a label hit by a chunk's text) yields one occurrence
//     per frame segment the chunk overlaps: StartMs/EndMs are the overlap of
//     the two, FrameStartMs/FrameEndMs the whole segment and
//     TranscriptStartMs/TranscriptEndMs the whole chunk. A zero-length chunk
//     (a point cue) overlaps the segment that contains its instant and is a
//     point-in-time occurrence there. A chunk outside every segment (captions
//     that run past the end of the picture) still reports its hit, with the
//     chunk as its range and no frame fields, because dropping a hit would
//     hide a violation.
//
// Hits are in ascending StartMs; at equal starts point-in-time hits come
// first, then shorter ranges, and otherwise the order of construction (frame
// hits before transcript hits, segments and chunks in timeline order, labels
// in document order), so the order is deterministic (SPEC.md rule 1 of the
// label-hits endpoint). segments must be sorted and non-overlapping, as the
// scene detector produces them.
func VideoHits(frames []FrameLabels, chunks []ChunkLabels) []TimedHit {
	var hits []TimedHit
	for _, f := range frames {
		for _, l := range f.Labels {
			hits = append(hits, TimedHit{
				Label: l.Label, Kind: MediaVideo, Score: l.Score,
				StartMs:      f.Segment.StartMs,
				FrameStartMs: ptr(f.Segment.StartMs), FrameEndMs: ptr(f.Segment.EndMs),
			})
		}
	}
	for _, c := range chunks {
		if len(c.Labels) == 0 {
			continue
		}
		matched := false
		for k, f := range frames {
			start, end, ok := overlap(f.Segment, c.Chunk, k == len(frames)-1)
			if !ok {
				continue
			}
			matched = true
			for _, l := range c.Labels {
				h := TimedHit{
					Label: l.Label, Kind: MediaVideo, Score: l.Score,
					StartMs:      start,
					FrameStartMs: ptr(f.Segment.StartMs), FrameEndMs: ptr(f.Segment.EndMs),
					TranscriptStartMs: ptr(c.Chunk.StartMs), TranscriptEndMs: ptr(c.Chunk.EndMs), Spans: l.Spans,
				}
				if end > start {
					h.EndMs = ptr(end)
				}
				hits = append(hits, h)
			}
		}
		if !matched {
			for _, l := range c.Labels {
				h := TimedHit{
					Label: l.Label, Kind: MediaVideo, Score: l.Score,
					StartMs:           c.Chunk.StartMs,
					TranscriptStartMs: ptr(c.Chunk.StartMs), TranscriptEndMs: ptr(c.Chunk.EndMs), Spans: l.Spans,
				}
				if c.Chunk.EndMs > c.Chunk.StartMs {
					h.EndMs = ptr(c.Chunk.EndMs)
				}
				hits = append(hits, h)
			}
		}
	}
	sortHits(hits)
	return hits
}

// overlap returns the intersection of a segment [s, e) and a chunk [cs, ce).
// A zero-length chunk overlaps the segment containing its instant; the end
// of the last segment counts as inside it, so a point cue at the very end of
// the video is not lost.
func overlap(seg FrameSegment, c TranscriptChunk, last bool) (start, end int64, ok bool) {
	if c.EndMs <= c.StartMs {
		if c.StartMs >= seg.StartMs && (c.StartMs < seg.EndMs || (last && c.StartMs == seg.EndMs)) {
			return c.StartMs, c.StartMs, true
		}
		return 0, 0, false
	}
	start, end = max(seg.StartMs, c.StartMs), min(seg.EndMs, c.EndMs)
	if start >= end {
		return 0, 0, false
	}
	return start, end, true
}

// AudioHits builds the hits of an audio item: one ranged hit per label per
// chunk, with the chunk's start and end (SPEC.md: "Audio chunk hits use the
// chunk start"), and no frame or transcript fields (they are video only). A
// zero-length chunk has no end bound, so EndMs is absent for it.
func AudioHits(chunks []ChunkLabels) []TimedHit {
	var hits []TimedHit
	for _, c := range chunks {
		for _, l := range c.Labels {
			h := TimedHit{Label: l.Label, Kind: MediaAudio, Score: l.Score, StartMs: c.Chunk.StartMs, Spans: l.Spans}
			if c.Chunk.EndMs > c.Chunk.StartMs {
				h.EndMs = ptr(c.Chunk.EndMs)
			}
			hits = append(hits, h)
		}
	}
	sortHits(hits)
	return hits
}

// sortHits orders hits by start, point-in-time before ranged, then by end;
// the sort is stable so construction order breaks the remaining ties.
func sortHits(hits []TimedHit) {
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.StartMs != b.StartMs {
			return a.StartMs < b.StartMs
		}
		if (a.EndMs == nil) != (b.EndMs == nil) {
			return a.EndMs == nil
		}
		if a.EndMs != nil && *a.EndMs != *b.EndMs {
			return *a.EndMs < *b.EndMs
		}
		return false
	})
}

// MergeReports combines the reports of the evaluations of one media item
// (one per frame and one per transcript chunk) into the item's report: a
// section takes its TRUE evaluation with the highest score when it was TRUE
// anywhere, else its best evaluation that did not fail, else its first.
// Frame evaluations fail text-only sections (a frame has no text) and chunk
// evaluations fail hash sections, so "best that did not fail" keeps a
// section from being reported FAILED merely because the other modality
// cannot evaluate it. The document result follows RULES.md: TRUE if any
// section is TRUE, else FAILED if any failed, else FALSE. Token usage adds
// up; flagged spans are bounded as in one report (rules.LimitSpans). It
// returns nil for no reports.
func MergeReports(reports []*rules.Report) *rules.Report {
	var first *rules.Report
	for _, r := range reports {
		if r != nil {
			first = r
			break
		}
	}
	if first == nil {
		return nil
	}
	out := &rules.Report{Threshold: first.Threshold, Exception: first.Exception, LabelMatches: map[string]float64{}}
	out.Sections = make([]rules.SectionReport, len(first.Sections))
	rank := func(s rules.SectionReport) int {
		switch s.Result {
		case rules.OutcomeTrue:
			return 2
		case rules.OutcomeFalse:
			return 1
		}
		return 0
	}
	for i := range first.Sections {
		best := first.Sections[i]
		for _, r := range reports {
			if r == nil || i >= len(r.Sections) {
				continue
			}
			s := r.Sections[i]
			if rank(s) > rank(best) || (rank(s) == rank(best) && s.Score > best.Score) {
				best = s
			}
		}
		out.Sections[i] = best
	}
	for _, r := range reports {
		if r == nil {
			continue
		}
		out.TokenUsage.InputTokens += r.TokenUsage.InputTokens
		out.TokenUsage.BilledTokens += r.TokenUsage.BilledTokens
		out.TokenUsage.Multiplier = max(out.TokenUsage.Multiplier, r.TokenUsage.Multiplier)
		if r.Exception != nil && r.Exception.Result == rules.OutcomeTrue {
			out.Exception = r.Exception
		}
	}
	out.Result = rules.OutcomeFalse
	failed := false
	for _, s := range out.Sections {
		switch s.Result {
		case rules.OutcomeTrue:
			out.Result = rules.OutcomeTrue
			out.LabelMatches[s.Name] = s.Score
		case rules.OutcomeFailed:
			failed = true
		}
	}
	if out.Result != rules.OutcomeTrue && failed {
		out.Result = rules.OutcomeFailed
	}
	// Sections taken from different chunks bring the spans of each.
	return rules.LimitSpans(out)
}

// VideoFrame is the representative frame of one segment, handed to a
// FramePrecheck before it is evaluated.
type VideoFrame struct {
	Segment FrameSegment
	AtMs    int64  // where in the segment the frame was taken
	Encoded []byte // the frame as a PNG file
	// Features are the hashes HASH signals compare against.
	Features rules.ImageFeatures
}

// FramePrecheck is the hash precheck of video frames (DESIGN §7): a frame that
// matches an operator hash list blocks the whole job. A non-nil error stops
// the analysis and is returned unchanged, so the caller can recognise its own
// blocked-content error and fail the job with CONTENT_BLOCKED.
type FramePrecheck interface {
	PrecheckFrame(ctx context.Context, f VideoFrame) error
}

// MediaEvalFunc evaluates one piece of timed media — a frame (Content.Image
// set, no text) or a transcript chunk (Content.Text) — with the job's compiled
// plan and options. The caller supplies it so the analyzer needs no plan.
type MediaEvalFunc func(ctx context.Context, c rules.Content) (*rules.Report, error)

// MediaAnalysis is the outcome of analysing one timed-media item.
type MediaAnalysis struct {
	Kind        MediaKind
	ContentHash string // sha256::<hex> of the media bytes as received
	DurationMs  int64
	Segments    []FrameSegment    // video only
	Chunks      []TranscriptChunk // the transcript that was evaluated
	// TranscriptSource says where Chunks came from: "captions", "asr", or
	// "none" (a video without captions on a server without speech
	// recognition, or without an audio track).
	TranscriptSource string
	Hits             []TimedHit
	// Report is MergeReports over every evaluation of the item.
	Report *rules.Report
}

// MediaAnalyzer analyses timed media (DESIGN §8). Errors: *MediaError for the
// failures with a JobErrorReason (including missing tools), the
// FramePrecheck's error unchanged, ctx's error when it ends, and the
// MediaEvalFunc's errors unchanged.
type MediaAnalyzer interface {
	AnalyzeMedia(ctx context.Context, in MediaInput, pre FramePrecheck, eval MediaEvalFunc) (*MediaAnalysis, error)
}
