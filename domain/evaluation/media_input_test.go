package evaluation

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

func TestMediaInputOf(t *testing.T) {
	t.Parallel()
	b := []byte("bytes")
	for _, tc := range []struct {
		it   domain.ContentItem
		want domain.MediaInput
		ok   bool
	}{
		{domain.ContentItem{Kind: domain.ContentVideo, Bytes: b, Captions: "WEBVTT"}, domain.MediaInput{Kind: domain.MediaVideo, Data: b, Captions: "WEBVTT", HasCaptions: true}, true},
		{domain.ContentItem{Kind: domain.ContentVideoURL, URL: "https://x/v.m3u8"}, domain.MediaInput{Kind: domain.MediaVideo, URL: "https://x/v.m3u8"}, true},
		{domain.ContentItem{Kind: domain.ContentAudio, Bytes: b}, domain.MediaInput{Kind: domain.MediaAudio, Data: b}, true},
		{domain.ContentItem{Kind: domain.ContentAudioURL, URL: "https://x/a.mp3", Captions: "WEBVTT\n"}, domain.MediaInput{Kind: domain.MediaAudio, URL: "https://x/a.mp3", Captions: "WEBVTT\n", HasCaptions: true}, true},
		{domain.ContentItem{Kind: domain.ContentText, Text: "hi"}, domain.MediaInput{}, false},
		{domain.ContentItem{Kind: domain.ContentImage, Bytes: b}, domain.MediaInput{}, false},
	} {
		got, ok := MediaInputOf(tc.it)
		require.Equal(t, tc.ok, ok, tc.it.Kind)
		require.Equal(t, tc.want, got, tc.it.Kind)
		require.Equal(t, tc.ok, domain.IsMediaKind(tc.it.Kind))
	}
}

func TestMediaTimedLabelHits(t *testing.T) {
	t.Parallel()
	seq := 7
	got := TimedLabelHits("job", "res", []domain.TimedHit{
		{Label: "A", Kind: domain.MediaVideo, Score: 0.9, StartMs: 1500, EndMs: mediaMs(2000),
			FrameStartMs: mediaMs(0), FrameEndMs: mediaMs(2000), TranscriptStartMs: mediaMs(1500), TranscriptEndMs: mediaMs(3000)},
		{Label: "B", Kind: domain.MediaVideo, Score: 1, StartMs: 2000, FrameStartMs: mediaMs(2000), FrameEndMs: mediaMs(4000)},
		{Label: "C", Kind: domain.MediaAudio, Score: 0.6, StartMs: 0, EndMs: mediaMs(9000)},
	}, &seq)
	require.Equal(t, []*domain.LabelHit{
		{JobID: "job", JobResultID: "res", Seq: 7, Label: "A", Modality: domain.ModalityVideo, Score: 0.9, StartMs: 1500, EndMs: mediaMs(2000),
			FrameStartMs: mediaMs(0), FrameEndMs: mediaMs(2000), TranscriptStartMs: mediaMs(1500), TranscriptEndMs: mediaMs(3000)},
		{JobID: "job", JobResultID: "res", Seq: 8, Label: "B", Modality: domain.ModalityVideo, Score: 1, StartMs: 2000,
			FrameStartMs: mediaMs(2000), FrameEndMs: mediaMs(4000)},
		{JobID: "job", JobResultID: "res", Seq: 9, Label: "C", Modality: domain.ModalityAudio, Score: 0.6, StartMs: 0, EndMs: mediaMs(9000)},
	}, got)
	require.Equal(t, 10, seq)
}
