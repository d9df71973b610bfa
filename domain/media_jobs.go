package domain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// This file is the integration point of timed media (issue 8) with job
// execution. It is kept apart from the worker so that the media side can be
// reviewed on its own; the worker has four small hooks, which mirror what
// it does for images:
//
//  1. JobConfig gets `Media MediaAnalyzer` and `MediaPrecheck
//     FramePrecheckFor` (nil Media keeps failing media jobs with
//     ErrJobNoMedia; nil MediaPrecheck skips the frame precheck);
//  2. unavailableContent lets ContentVideo/VideoURL/Audio/AudioURL through
//     when Media is set;
//  3. evaluateItem starts with
//     `if isMediaKind(it.Kind) { return evaluateMediaItem(ctx, s.cfg.Media,
//     s.cfg.MediaPrecheck, j, i, it, plan, s.clock.Now, seq) }`;
//  4. where the worker maps imageJobError, it maps mediaJobError too, so a
//     media failure fails the job with its own JobErrorReason.

// FramePrecheckFor returns the frame precheck of one job: the precheck
// audits every match with the account and job it came from.
type FramePrecheckFor func(accountID, jobID string) FramePrecheck

// isMediaKind reports whether a content item is timed media.
func isMediaKind(k ContentKind) bool {
	switch k {
	case ContentVideo, ContentVideoURL, ContentAudio, ContentAudioURL:
		return true
	}
	return false
}

// MediaInputOf maps a video or audio content item to the analyzer's input.
// An empty captions field means no captions: an empty string is not a
// WebVTT file, and a client that sends "" has no transcript to give.
func MediaInputOf(it ContentItem) (MediaInput, bool) {
	in := MediaInput{Captions: it.Captions, HasCaptions: it.Captions != ""}
	switch it.Kind {
	case ContentVideo:
		in.Kind, in.Data = MediaVideo, it.Bytes
	case ContentVideoURL:
		in.Kind, in.URL = MediaVideo, it.URL
	case ContentAudio:
		in.Kind, in.Data = MediaAudio, it.Bytes
	case ContentAudioURL:
		in.Kind, in.URL = MediaAudio, it.URL
	default:
		return MediaInput{}, false
	}
	return in, true
}

// TimedLabelHits numbers the timed hits of one result for storage, in the
// order the analysis produced them (ascending start), continuing *seq.
func TimedLabelHits(jobID, resultID string, hits []TimedHit, seq *int) []*LabelHit {
	out := make([]*LabelHit, 0, len(hits))
	for _, h := range hits {
		m := ModalityVideo
		if h.Kind == MediaAudio {
			m = ModalityAudio
		}
		out = append(out, &LabelHit{
			JobID: jobID, JobResultID: resultID, Seq: *seq,
			Label: h.Label, Modality: m, Score: h.Score,
			StartMs: h.StartMs, EndMs: h.EndMs,
			FrameStartMs: h.FrameStartMs, FrameEndMs: h.FrameEndMs,
			TranscriptStartMs: h.TranscriptStartMs, TranscriptEndMs: h.TranscriptEndMs,
		})
		*seq++
	}
	return out
}

// evaluateMediaItem evaluates content item i of job j — a video or audio
// entry — with plan: the analyzer stages, segments and transcribes it and
// calls back for every frame and chunk; the result carries the merged report
// and the timed hits. The content hash is the one computed on submission,
// or, for a URL (whose bytes were not known then), the analyzer's hash of
// what it fetched. Errors are the analyzer's: mediaJobError maps those that
// fail the job with a specific reason; the rest (context, evaluation) are
// the worker's to handle.
func evaluateMediaItem(ctx context.Context, an MediaAnalyzer, preFor FramePrecheckFor, j *Job, i int, it ContentItem, plan *rules.Plan, now func() time.Time, seq *int) (*JobResult, []*LabelHit, error) {
	in, ok := MediaInputOf(it)
	if !ok {
		return nil, nil, fmt.Errorf("evaluateMediaItem: %s is not timed media", it.Kind)
	}
	if an == nil {
		e := ErrJobNoMedia
		return nil, nil, &MediaError{Reason: e.Reason, Message: e.Message}
	}
	eval := func(ctx context.Context, c rules.Content) (*rules.Report, error) {
		return plan.Evaluate(ctx, c, rules.EvalOptions{Threshold: j.Threshold, Expedited: j.Expedited})
	}
	var pre FramePrecheck
	if preFor != nil {
		pre = preFor(j.AccountID, j.ID)
	}
	res, err := an.AnalyzeMedia(ctx, in, pre, eval)
	if err != nil {
		return nil, nil, err
	}
	hash := res.ContentHash
	if i < len(j.Contents) && j.Contents[i].ContentHash != "" {
		hash = j.Contents[i].ContentHash
	}
	r := &JobResult{
		ID: NewID(), JobID: j.ID, Index: i, ContentHash: hash,
		Metadata: it.Metadata, Report: res.Report, Created: now(),
	}
	return r, TimedLabelHits(j.ID, r.ID, res.Hits, seq), nil
}

// reasoner is a precheck rejection that names its job error reason (the
// frame precheck adapter returns domain/precheck's *Blocked, which cannot be
// named here without an import cycle).
type reasoner interface{ Reason() string }

// mediaJobError maps an error of evaluateMediaItem to the job's terminal
// error, or nil when err is not a media failure (then it is handled as any
// evaluation error: deadline, shutdown, internal).
func mediaJobError(err error) *JobError {
	if err == nil {
		return nil
	}
	if me, ok := MediaErrorOf(err); ok {
		e := me.JobError()
		return &e
	}
	var r reasoner
	if errors.As(err, &r) {
		var e JobError
		switch JobErrorReason(r.Reason()) {
		case ReasonContentBlocked:
			e = ErrJobContentBlocked
		case ReasonContentPrecheckFailed:
			e = ErrJobPrecheckFailed
		default:
			return nil
		}
		return &e
	}
	return imageJobError(err)
}
