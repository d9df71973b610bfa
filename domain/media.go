package domain

import (
	"context"
	"errors"
	"fmt"

	"github.com/contenteval/contenteval/domain/rules"
)

// This file holds the timed-media (video and audio) side of the domain
// (docs/api.md#timed-media): the shapes a media analyzer works with, the
// failure reasons it reports. The timed label hits are built by the item
// runner (domain/evaluation).
// The media package (an adapter, like persistence) runs ffmpeg and speech
// recognition and implements MediaAnalyzer; nothing here does I/O.

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
// shape of the hits (the API's LabelHit).
type MediaKind string

// Media kinds.
const (
	MediaVideo MediaKind = "video"
	MediaAudio MediaKind = "audio"
)

// MediaInput is one timed-media content entry (videoUrl/audioUrl or inline bytes): exactly one of URL
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

// TimedHit is one timed occurrence of a label (docs/api.md#timed-media) before it
// is numbered and stored. Nil pointers are absent fields; the timecodes are
// derived from the milliseconds by the API adapter whenever they are set.
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

// VideoFrame is the representative frame of one segment, handed to a
// FramePrecheck before it is evaluated.
type VideoFrame struct {
	Segment FrameSegment
	AtMs    int64  // where in the segment the frame was taken
	Encoded []byte // the frame as a PNG file
	// Features are the hashes HASH signals compare against.
	Features rules.ImageFeatures
}

// FramePrecheck is the hash precheck of video frames (docs/operations.md#image-precheck-hash-lists): a frame that
// matches an operator hash list blocks the whole job. A non-nil error stops
// the analysis and is returned unchanged, so the caller can recognise its own
// blocked-content error and fail the job with CONTENT_BLOCKED.
type FramePrecheck interface {
	PrecheckFrame(ctx context.Context, f VideoFrame) error
	// PrecheckMatches returns the matches of the frames checked so far
	// that let them through (SHADOW lists), each list's hash once, for the
	// video's report.
	PrecheckMatches() []rules.PrecheckMatch
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
	// Report is evaluation.MergeReports over every evaluation of the item.
	Report *rules.Report
}

// MediaAnalyzer analyses timed media (docs/api.md#timed-media). Errors: *MediaError for the
// failures with a JobErrorReason (including missing tools), the
// FramePrecheck's error unchanged, ctx's error when it ends, and the
// MediaEvalFunc's errors unchanged.
type MediaAnalyzer interface {
	AnalyzeMedia(ctx context.Context, in MediaInput, pre FramePrecheck, eval MediaEvalFunc) (*MediaAnalysis, error)
}
