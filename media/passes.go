package media

import (
	"context"
	"errors"
	"fmt"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/rules"
)

// mediaPass is what an analysis gathers over its frame and transcript
// passes: the segments and chunks (in out), a report per evaluation, and the
// timed hits. The hits are bounded as they are made, a frame's or a chunk's
// at a time: a video whose every frame hits every label holds the item's
// bound of them, not one per label per frame.
type mediaPass struct {
	out     *domain.MediaAnalysis
	reports []*rules.Report
	hits    evaluation.TimedHitBound
}

// framePass cuts the video into scenes and evaluates each one's
// representative frame; a frame's labels make their own hits.
func (a *Analyzer) framePass(ctx context.Context, input string, pr probeResult, pre domain.FramePrecheck, eval domain.MediaEvalFunc, p *mediaPass) error {
	err := a.scanScenes(ctx, input, pr.Demuxer, pr.DurationMs, func(seg domain.FrameSegment, f sampledFrame) error {
		rep, labels, err := a.evaluateFrame(ctx, seg, f, pre, eval)
		if err != nil {
			return &frameError{err}
		}
		p.out.Segments = append(p.out.Segments, seg)
		p.reports = append(p.reports, rep)
		p.hits.Add(evaluation.VideoHits([]domain.FrameLabels{{Segment: seg, Labels: labels}}, nil))
		return nil
	})
	var fe *frameError
	switch {
	case errors.As(err, &fe):
		return fe.err
	case errors.Is(err, errSceneCeiling):
		return domain.NewMediaError(domain.ReasonVideoSceneCeilingExceeded, msgSceneCeiling,
			fmt.Errorf("more than %d scenes", a.cfg.SceneCeiling))
	case err != nil:
		return a.failure(ctx, err, domain.ReasonVideoValidationFailure, msgUndecodable)
	}
	return nil
}

// transcriptPass builds the transcript (the captions' chunks, or speech
// recognition's when there are no captions) and evaluates each chunk; an
// item with nothing evaluated yet evaluates the empty transcript once.
func (a *Analyzer) transcriptPass(ctx context.Context, in domain.MediaInput, input string, pr probeResult, chunks []domain.TranscriptChunk, source string, eval domain.MediaEvalFunc, p *mediaPass) error {
	if !in.HasCaptions && pr.HasAudio && a.tools.ASRReady() {
		words, err := a.recognise(ctx, input, pr.Demuxer)
		if err != nil {
			return a.failure(ctx, err, domain.ReasonTranscriptArtifactInvalid, msgTranscript)
		}
		chunks, source = ChunkWords(words, MaxASRChunkMs), "asr"
	}
	p.out.Chunks, p.out.TranscriptSource = chunks, source

	modality := string(in.Kind)
	// A chunk's hits are placed on the segments only (the frames' labels
	// made their own hits in the frame pass).
	segments := make([]domain.FrameLabels, len(p.out.Segments))
	for i, seg := range p.out.Segments {
		segments[i].Segment = seg
	}
	for _, c := range chunks {
		rep, err := eval(ctx, rules.Content{Text: c.Text, Modality: modality, Transcript: &rules.TimeRange{StartMs: c.StartMs, EndMs: c.EndMs}})
		if err != nil {
			return err
		}
		p.reports = append(p.reports, rep)
		chunk := []domain.ChunkLabels{{Chunk: c, Labels: domain.TrueLabels(rep)}}
		if in.Kind == domain.MediaVideo {
			p.hits.Add(evaluation.VideoHits(segments, chunk))
		} else {
			p.hits.Add(evaluation.AudioHits(chunk))
		}
	}
	if len(p.reports) == 0 {
		// Silent audio: evaluate the empty transcript once so the item still
		// has a report (every section FALSE, or FAILED where it needs a model).
		rep, err := eval(ctx, rules.Content{Text: "", Modality: modality})
		if err != nil {
			return err
		}
		p.reports = append(p.reports, rep)
	}
	return nil
}

// captions returns the transcript of in's captions, and where the
// transcript will come from: "captions", or "none" until speech recognition
// makes one. Audio without captions needs a speech recogniser.
func (a *Analyzer) captions(in domain.MediaInput) ([]domain.TranscriptChunk, string, error) {
	if !in.HasCaptions {
		if in.Kind == domain.MediaAudio && !a.tools.ASRReady() {
			return nil, "", domain.NewMediaError(domain.ReasonJobFailed, msgNoTranscriber, nil)
		}
		return nil, "none", nil
	}
	chunks, err := ParseWebVTT(in.Captions)
	if err != nil {
		return nil, "", domain.NewMediaError(domain.ReasonTranscriptArtifactInvalid, msgCaptions, err)
	}
	return chunks, "captions", nil
}

// frameError carries an error of a frame's precheck or evaluation out of
// the scene pass unchanged.
type frameError struct{ err error }

func (e *frameError) Error() string { return e.err.Error() }

// evaluateFrame hashes a segment's representative frame, prechecks it and
// evaluates it with the image signals.
func (a *Analyzer) evaluateFrame(ctx context.Context, seg domain.FrameSegment, f sampledFrame, pre domain.FramePrecheck, eval domain.MediaEvalFunc) (*rules.Report, []domain.ScoredLabel, error) {
	feat, err := frameFeatures(ctx, a.cfg.DecodeBudget, f.png, a.cfg.Frames)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, domain.NewMediaError(domain.ReasonVideoValidationFailure, msgUndecodable, err)
	}
	if pre != nil {
		if err := pre.PrecheckFrame(ctx, domain.VideoFrame{Segment: seg, AtMs: f.atMs, Encoded: f.png, Features: feat}); err != nil {
			return nil, nil, err
		}
	}
	rep, err := eval(ctx, rules.Content{Image: &feat, Modality: string(domain.MediaVideo), ImageBytes: f.png, ImageType: "image/png"})
	if err != nil {
		return nil, nil, err
	}
	return rep, domain.TrueLabels(rep), nil
}
