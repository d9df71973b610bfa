package main

import (
	"bytes"
	"context"
	"image"
	"image/color/palette"
	"image/draw"
	"image/gif"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// TestHashListVideo: a video one of whose frames matches an ENFORCE list
// fails with the frame's time range; on a SHADOW list it completes.
func TestHashListVideo(t *testing.T) {
	requireFFmpeg(t)
	still, pdq := texturedImage(t, 5, 0)
	dir := t.TempDir()
	stillPath := filepath.Join(dir, "still.png")
	require.NoError(t, os.WriteFile(stillPath, still, 0o600))
	video := filepath.Join(dir, "v.mp4")
	// Two seconds of white, then two of the still (a scene cut at 2 s).
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error",
		"-f", "lavfi", "-i", "color=c=white:s=128x128:d=2:r=10",
		"-loop", "1", "-framerate", "10", "-t", "2", "-i", stillPath,
		"-filter_complex", "[0:v][1:v]concat=n=2:v=1:a=0,format=yuv420p[v]", "-map", "[v]",
		"-c:v", "libx264", "-qp", "0", video).CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(video)
	require.NoError(t, err)

	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		hl := env.hashLists(t, env.PolicyFirst.Token)
		policyID := env.createPolicy(env.PolicyFirst.Token, "video")
		l := hl.create(client.CreateHashListRequest{Name: "frames", Kind: client.Pdq})
		hl.add(l.ListId, client.NewHashListEntry{Hash: pdq.String()})

		j := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{Video: &data}}})
		require.Equal(t, client.JOBSTATUSFAILED, j.Status)
		require.Equal(t, client.JOBERRORREASONCONTENTBLOCKED, j.Error.Reason)
		require.Contains(t, j.Error.Message, "from 00:00:02.000 to 00:00:04.000")

		r, err := hl.c.UpdateHashListWithResponse(context.Background(), l.ListId, client.UpdateHashListRequest{Mode: ptr(client.HASHLISTMODESHADOW)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		ms := hl.shadowMatches(policyID, client.ContentData{Video: &data})
		require.Len(t, ms, 1, "the report names the SHADOW match")
		require.Equal(t, l.ListId, ms[0].ListId)
		require.Equal(t, "2000", *ms[0].FrameStartMs)
		require.Equal(t, "4000", *ms[0].FrameEndMs)
		require.EqualValues(t, 2, hl.entry(l.ListId, pdq.String()).MatchCount)
	})
}

// animation is a 128x128 GIF of white ('w'), textured ('t') and nearly
// textured ('u': a corner changed) frames, shown for delays hundredths of
// a second each; and the PDQ of the textured and nearly textured frames as
// shown (their colours reduced to the GIF's palette).
func animation(t *testing.T, frames string, delays ...int) ([]byte, imaging.Hash, imaging.Hash) {
	t.Helper()
	png, _ := texturedImage(t, 6, 0)
	src, _, err := imaging.Decode(png, imaging.Limits{})
	require.NoError(t, err)
	bounds := image.Rect(0, 0, 128, 128)
	textured := image.NewPaletted(bounds, palette.Plan9)
	draw.FloydSteinberg.Draw(textured, bounds, src, image.Point{})
	near := image.NewPaletted(bounds, palette.Plan9)
	copy(near.Pix, textured.Pix)
	draw.Draw(near, image.Rect(0, 0, 12, 12), image.White, image.Point{}, draw.Src)
	white := image.NewPaletted(bounds, palette.Plan9)
	draw.Draw(white, bounds, image.White, image.Point{}, draw.Src)
	g := &gif.GIF{Delay: delays}
	for _, f := range frames {
		g.Image = append(g.Image, map[rune]*image.Paletted{'w': white, 't': textured, 'u': near}[f])
	}
	var b bytes.Buffer
	require.NoError(t, gif.EncodeAll(&b, g))
	h, q := imaging.PDQ(textured)
	require.GreaterOrEqual(t, q, imaging.RecommendedMinPDQQuality)
	hu, _ := imaging.PDQ(near)
	return b.Bytes(), h, hu
}

// TestHashListAnimation: an animated GIF one of whose later frames matches
// an ENFORCE list is refused (499) with the frame's time range; on a
// SHADOW list it completes and the match is counted, once for a GIF that
// shows the frame twice. A GIF without that frame passes.
func TestHashListAnimation(t *testing.T) {
	data, pdq, _ := animation(t, "wtw", 200, 200, 100)
	twice, _, _ := animation(t, "wtwt", 200, 200, 100, 100)
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		hl := env.hashLists(t, env.PolicyFirst.Token)
		policyID := env.createPolicy(env.PolicyFirst.Token, "gif")
		l := hl.create(client.CreateHashListRequest{Name: "frames", Kind: client.Pdq})
		hl.add(l.ListId, client.NewHashListEntry{Hash: pdq.String(), Source: ptr("test")})

		f := hl.submitImage(policyID, data)
		require.NotNil(t, f, "the second frame matches")
		require.Equal(t, l.ListId, *f.ListId)
		require.Equal(t, client.PRECHECKFAILURETYPENCMEC, f.Type)
		require.Equal(t, "2000", *f.FrameStartMs)
		require.Equal(t, "4000", *f.FrameEndMs)

		var still bytes.Buffer
		require.NoError(t, gif.Encode(&still, image.NewPaletted(image.Rect(0, 0, 128, 128), palette.Plan9), nil))
		require.Nil(t, hl.submitImage(policyID, still.Bytes()), "a GIF without the frame passes")

		r, err := hl.c.UpdateHashListWithResponse(context.Background(), l.ListId, client.UpdateHashListRequest{Mode: ptr(client.HASHLISTMODESHADOW)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		ms := hl.shadowMatches(policyID, client.ContentData{Image: &data})
		require.Len(t, ms, 1, "a SHADOW list does not refuse, and the report says what matched")
		require.Equal(t, "2000", *ms[0].FrameStartMs)
		require.Equal(t, "4000", *ms[0].FrameEndMs)
		require.Equal(t, "test", *ms[0].Source)
		require.EqualValues(t, 2, hl.entry(l.ListId, pdq.String()).MatchCount)
		ms = hl.shadowMatches(policyID, client.ContentData{Image: &twice})
		require.Len(t, ms, 1, "a content showing the frame twice is one match")
		require.Equal(t, "2000", *ms[0].FrameStartMs)
		require.EqualValues(t, 3, hl.entry(l.ListId, pdq.String()).MatchCount, "a content showing the frame twice is one match")
	})
}

// TestHashListAnimationAllowIsPerFrame: an ALLOW list matching one frame
// does not let another frame through that only an ENFORCE list matches,
// though the ENFORCE list's hash is the same one the allowed frame matched.
func TestHashListAnimationAllowIsPerFrame(t *testing.T) {
	allowedThenNear, pdq, near := animation(t, "tu", 100, 100)
	allowedTwice, _, _ := animation(t, "tt", 100, 100)
	d := pdq.Distance(near)
	require.True(t, d > 0 && d <= 60, "the near frame is %d bits from the textured one", d)
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		hl := env.hashLists(t, env.PolicyFirst.Token)
		policyID := env.createPolicy(env.PolicyFirst.Token, "gif")
		allow := hl.create(client.CreateHashListRequest{Name: "allow", Kind: client.Pdq, Mode: ptr(client.HASHLISTMODEALLOW), Bands: bands(0, 0, 0, 0)})
		hl.add(allow.ListId, client.NewHashListEntry{Hash: pdq.String()})
		enforce := hl.create(client.CreateHashListRequest{Name: "enforce", Kind: client.Pdq, Bands: bands(0, 20, 40, 60)})
		hl.add(enforce.ListId, client.NewHashListEntry{Hash: pdq.String()})

		require.Nil(t, hl.submitImage(policyID, allowedTwice), "the allowed frame passes")
		f := hl.submitImage(policyID, allowedThenNear)
		require.NotNil(t, f, "the frame only the ENFORCE list matches is refused")
		require.Equal(t, enforce.ListId, *f.ListId)
		require.Equal(t, "1000", *f.FrameStartMs)
	})
}
