package domain

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/rules"
)

func TestMediaInputOf(t *testing.T) {
	t.Parallel()
	b := []byte("bytes")
	for _, tc := range []struct {
		it   ContentItem
		want MediaInput
		ok   bool
	}{
		{ContentItem{Kind: ContentVideo, Bytes: b, Captions: "WEBVTT"}, MediaInput{Kind: MediaVideo, Data: b, Captions: "WEBVTT", HasCaptions: true}, true},
		{ContentItem{Kind: ContentVideoURL, URL: "https://x/v.m3u8"}, MediaInput{Kind: MediaVideo, URL: "https://x/v.m3u8"}, true},
		{ContentItem{Kind: ContentAudio, Bytes: b}, MediaInput{Kind: MediaAudio, Data: b}, true},
		{ContentItem{Kind: ContentAudioURL, URL: "https://x/a.mp3", Captions: "WEBVTT\n"}, MediaInput{Kind: MediaAudio, URL: "https://x/a.mp3", Captions: "WEBVTT\n", HasCaptions: true}, true},
		{ContentItem{Kind: ContentText, Text: "hi"}, MediaInput{}, false},
		{ContentItem{Kind: ContentImage, Bytes: b}, MediaInput{}, false},
	} {
		got, ok := MediaInputOf(tc.it)
		require.Equal(t, tc.ok, ok, tc.it.Kind)
		require.Equal(t, tc.want, got, tc.it.Kind)
		require.Equal(t, tc.ok, isMediaKind(tc.it.Kind))
	}
}

func TestMediaTimedLabelHits(t *testing.T) {
	t.Parallel()
	seq := 7
	got := TimedLabelHits("job", "res", []TimedHit{
		{Label: "A", Kind: MediaVideo, Score: 0.9, StartMs: 1500, EndMs: mediaMs(2000),
			FrameStartMs: mediaMs(0), FrameEndMs: mediaMs(2000), TranscriptStartMs: mediaMs(1500), TranscriptEndMs: mediaMs(3000)},
		{Label: "B", Kind: MediaVideo, Score: 1, StartMs: 2000, FrameStartMs: mediaMs(2000), FrameEndMs: mediaMs(4000)},
		{Label: "C", Kind: MediaAudio, Score: 0.6, StartMs: 0, EndMs: mediaMs(9000)},
	}, &seq)
	require.Equal(t, []*LabelHit{
		{JobID: "job", JobResultID: "res", Seq: 7, Label: "A", Modality: ModalityVideo, Score: 0.9, StartMs: 1500, EndMs: mediaMs(2000),
			FrameStartMs: mediaMs(0), FrameEndMs: mediaMs(2000), TranscriptStartMs: mediaMs(1500), TranscriptEndMs: mediaMs(3000)},
		{JobID: "job", JobResultID: "res", Seq: 8, Label: "B", Modality: ModalityVideo, Score: 1, StartMs: 2000,
			FrameStartMs: mediaMs(2000), FrameEndMs: mediaMs(4000)},
		{JobID: "job", JobResultID: "res", Seq: 9, Label: "C", Modality: ModalityAudio, Score: 0.6, StartMs: 0, EndMs: mediaMs(9000)},
	}, got)
	require.Equal(t, 10, seq)
}

// fakeAnalyzer returns a fixed analysis after evaluating one chunk through
// the callback, so the test sees the job's plan and options reach it.
type fakeAnalyzer struct {
	got  MediaInput
	pre  FramePrecheck
	err  error
	text string
}

func (f *fakeAnalyzer) AnalyzeMedia(ctx context.Context, in MediaInput, pre FramePrecheck, eval MediaEvalFunc) (*MediaAnalysis, error) {
	f.got, f.pre = in, pre
	if f.err != nil {
		return nil, f.err
	}
	rep, err := eval(ctx, rules.Content{Text: f.text, Modality: "video"})
	if err != nil {
		return nil, err
	}
	var hits []TimedHit
	for _, l := range TrueLabels(rep) {
		hits = append(hits, TimedHit{Label: l.Label, Kind: in.Kind, Score: l.Score, StartMs: 100, EndMs: mediaMs(900),
			FrameStartMs: mediaMs(0), FrameEndMs: mediaMs(1000), TranscriptStartMs: mediaMs(100), TranscriptEndMs: mediaMs(900)})
	}
	return &MediaAnalysis{Kind: in.Kind, ContentHash: "sha256::fetched", Hits: hits, Report: rep}, nil
}

type jobPrecheck struct{ account, job string }

func (*jobPrecheck) PrecheckFrame(context.Context, VideoFrame) error { return nil }

type blockedErr struct{ reason string }

func (b *blockedErr) Error() string  { return "blocked" }
func (b *blockedErr) Reason() string { return b.reason }

func TestMediaJobError(t *testing.T) {
	t.Parallel()
	require.Nil(t, mediaJobError(nil))
	require.Nil(t, mediaJobError(errors.New("internal")))
	require.Nil(t, mediaJobError(context.DeadlineExceeded))
	for _, reason := range []JobErrorReason{ReasonVideoValidationFailure, ReasonVideoSceneCeilingExceeded,
		ReasonHLSRemuxTimeoutExhausted, ReasonTranscriptArtifactInvalid, ReasonVideoSourceUnreachable} {
		err := fmt.Errorf("item 0: %w", NewMediaError(reason, "fixed message", errors.New("cause")))
		require.Equal(t, &JobError{Reason: reason, Message: "fixed message"}, mediaJobError(err))
	}
	require.Equal(t, &ErrJobContentBlocked, mediaJobError(&blockedErr{"JOB_ERROR_REASON_CONTENT_BLOCKED"}))
	require.Equal(t, &ErrJobPrecheckFailed, mediaJobError(&blockedErr{"JOB_ERROR_REASON_CONTENT_PRECHECK_FAILED"}))
	require.Nil(t, mediaJobError(&blockedErr{"SOMETHING_ELSE"}))
}
