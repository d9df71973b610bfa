package main

import (
	"context"
	"github.com/contenteval/contenteval/internal/testenv"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// requireFFmpeg fails under CI (make media-tools installs it) and skips
// elsewhere when ffmpeg is missing.
func requireFFmpeg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		testenv.SkipUnlessCI(t, "ffmpeg is not installed (make media-tools)")
	}
}

// twoSceneVideo makes a 4 s video of two scenes of 2 s (red, then blue)
// with a tone, and returns its path.
func twoSceneVideo(t *testing.T) string {
	t.Helper()
	requireFFmpeg(t)
	video := filepath.Join(t.TempDir(), "v.mp4")
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error",
		"-f", "lavfi", "-i", "color=c=red:s=160x120:d=2:r=10",
		"-f", "lavfi", "-i", "color=c=blue:s=160x120:d=2:r=10",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=4",
		"-filter_complex", "[0:v][1:v]concat=n=2:v=1:a=0[v]", "-map", "[v]", "-map", "2:a",
		"-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", video).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return video
}

// TestVideoJob drives a video with captions through POST /v1/jobs and reads
// its timed hits: the worker's media path end to end.
func TestVideoJob(t *testing.T) {
	data, err := os.ReadFile(twoSceneVideo(t))
	require.NoError(t, err)
	captions := "WEBVTT\n\n00:00:00.500 --> 00:00:01.500\nhello there\n\n00:00:02.500 --> 00:00:03.500\ni will kill you\n"

	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		policyID := env.createPolicy(tok, "video")
		j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{Video: &data, Captions: &captions}}})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status, "%+v", j.Error)
		require.Equal(t, client.OUTCOMETRUE, labelOutcome(t, j, "Threat"))

		r, err := env.Client(tok).ListJobLabelHitsWithResponse(context.Background(), j.JobUuid, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		specChecked(t, r.HTTPResponse, r.Body)
		var threat []client.LabelHit
		for _, h := range *r.JSON200.Labels {
			if h.Label == "Threat" {
				threat = append(threat, h)
			}
		}
		require.Len(t, threat, 1)
		h := threat[0]
		require.Equal(t, client.MODALITYVIDEO, h.Modality)
		require.Equal(t, "2500", h.StartMs)
		require.Equal(t, "00:00:02.500", h.StartTimecode)
		require.Equal(t, "3500", *h.EndMs)
		require.Equal(t, "2500", *h.TranscriptStartMs)
		require.Equal(t, "3500", *h.TranscriptEndMs)
		require.Equal(t, "00:00:03.500", *h.TranscriptEndTimecode)
		require.NotNil(t, h.FrameStartMs, "the caption falls in the second scene")
		require.Equal(t, "00:00:02.000", *h.FrameStartTimecode)
	})
}
