package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
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
		require.Equal(t, tc.ok, IsMediaKind(tc.it.Kind))
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
