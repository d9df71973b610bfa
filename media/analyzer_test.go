package media

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/domain/rules"
)

// testVideo is a generated 5.6 s, 320x240, 25 fps H.264 video of three
// visually distinct scenes — SMPTE bars [0, 2 s), the moving test pattern
// [2 s, 4 s), a Mandelbrot zoom [4 s, 5.6 s) — optionally with a 440 Hz tone.
type testVideo struct {
	path string
	data []byte
	// knownBad is the PDQ hash of the frame the pipeline samples from the
	// middle scene (its first, at 2.000 s), extracted by an independent
	// ffmpeg run.
	knownBad imaging.Hash
	// other are the PDQ hashes of the samples of the first and last scenes.
	other []imaging.Hash
}

func makeVideo(t testing.TB, tools Tools, withAudio bool) testVideo {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "scenes.mp4")
	args := []string{
		"-f", "lavfi", "-i", "smptebars=s=320x240:r=25:d=2",
		"-f", "lavfi", "-i", "testsrc=s=320x240:r=25:d=2",
		"-f", "lavfi", "-i", "mandelbrot=s=320x240:r=25,trim=duration=1.6",
	}
	filter := "[0][1][2]concat=n=3:v=1:a=0,format=yuv420p[v]"
	maps := []string{"-map", "[v]"}
	if withAudio {
		args = append(args, "-f", "lavfi", "-i", "sine=f=440:d=5.6")
		maps = append(maps, "-map", "3:a", "-c:a", "aac", "-shortest")
	}
	args = append(args, "-filter_complex", filter)
	args = append(args, maps...)
	args = append(args, "-c:v", "libx264", "-preset", "ultrafast", path)
	ffmpeg(t, tools, args...)
	v := testVideo{path: path}
	var err error
	v.data, err = os.ReadFile(path)
	require.NoError(t, err)
	hashAt := func(sec string) imaging.Hash {
		png := filepath.Join(dir, "frame"+sec+".png")
		ffmpeg(t, tools, "-ss", sec, "-i", path, "-map", "0:v:0", "-frames:v", "1", "-c:v", "png", png)
		b, err := os.ReadFile(png)
		require.NoError(t, err)
		img, _, err := imaging.Decode(b, imaging.Limits{MaxBytes: 1 << 24, MaxPixels: 1 << 24})
		require.NoError(t, err)
		h, _ := imaging.PDQ(img)
		return h
	}
	v.knownBad = hashAt("2.000")
	v.other = []imaging.Hash{hashAt("0.000"), hashAt("4.000")}
	return v
}

// policy has a text label and a hash label, so frames and transcript chunks
// each hit one of them.
func policy(v testVideo) string {
	return fmt.Sprintf(`LABEL "Violence": "remove" {
    =("kill")
}
LABEL "KnownBad": "block" {
    HASH("pdq:%s", 31)
}
`, v.knownBad)
}

const captions = `WEBVTT

1
00:00:00.500 --> 00:00:01.500
hello there

2
00:00:01.500 --> 00:00:03.000
I will <b>kill</b> you

3
00:00:04.200 --> 00:00:05.000
nice weather
`

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256::" + hex.EncodeToString(s[:])
}

func TestAnalyzeVideoWithCaptions(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	v := makeVideo(t, tools, true)
	for _, o := range v.other {
		require.Greater(t, o.Distance(v.knownBad), 31, "the scenes must not look alike to PDQ")
	}
	a := newAnalyzer(t, tools, Config{}, nil)
	got, err := a.AnalyzeMedia(context.Background(),
		domain.MediaInput{Kind: domain.MediaVideo, Data: v.data, Captions: captions, HasCaptions: true},
		nil, compile(t, policy(v)))
	require.NoError(t, err)

	require.Equal(t, domain.MediaVideo, got.Kind)
	require.Equal(t, sha(v.data), got.ContentHash)
	require.Equal(t, int64(5600), got.DurationMs)
	require.Equal(t, []domain.FrameSegment{{StartMs: 0, EndMs: 2000}, {StartMs: 2000, EndMs: 4000}, {StartMs: 4000, EndMs: 5600}}, got.Segments)
	require.Equal(t, "captions", got.TranscriptSource)
	require.Equal(t, []domain.TranscriptChunk{
		{StartMs: 500, EndMs: 1500, Text: "hello there"},
		{StartMs: 1500, EndMs: 3000, Text: "I will kill you"},
		{StartMs: 4200, EndMs: 5000, Text: "nice weather"},
	}, got.Chunks)
	// The cue "I will kill you" [1.5 s, 3 s) crosses the cut at 2 s: two
	// occurrences, each the overlap with its segment, each carrying the
	// whole segment and the whole cue. The middle scene's frame matches the
	// hash list: a point-in-time hit at the segment start, no end, no
	// transcript; at equal start it precedes the ranged hit.
	// A transcript hit flags "kill" in the cue's text as evaluated (its markup
	// removed), naming the cue; a frame hit flags nothing.
	kill := []rules.TextSpan{{Start: 7, End: 11, Text: "kill", Transcript: &rules.TimeRange{StartMs: 1500, EndMs: 3000}}}
	require.Equal(t, []domain.TimedHit{
		{Label: "Violence", Kind: domain.MediaVideo, Score: 1, StartMs: 1500, EndMs: msp(2000),
			FrameStartMs: msp(0), FrameEndMs: msp(2000), TranscriptStartMs: msp(1500), TranscriptEndMs: msp(3000), Spans: kill},
		{Label: "KnownBad", Kind: domain.MediaVideo, Score: 1, StartMs: 2000,
			FrameStartMs: msp(2000), FrameEndMs: msp(4000)},
		{Label: "Violence", Kind: domain.MediaVideo, Score: 1, StartMs: 2000, EndMs: msp(3000),
			FrameStartMs: msp(2000), FrameEndMs: msp(4000), TranscriptStartMs: msp(1500), TranscriptEndMs: msp(3000), Spans: kill},
	}, got.Hits)
	require.Equal(t, rules.OutcomeTrue, got.Report.Result)
	require.Equal(t, map[string]float64{"Violence": 1, "KnownBad": 1}, got.Report.LabelMatches)
	// The merged report's rule carries the spans of the chunk it was taken from.
	for _, s := range got.Report.Sections {
		if s.Name == "Violence" {
			require.Equal(t, kill, s.FlaggedSpans())
		}
	}
}

func TestAnalyzeVideoWithoutTranscript(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	tools.Pocketsphinx = "" // a server without speech recognition
	v := makeVideo(t, tools, false)
	a := newAnalyzer(t, tools, Config{}, nil)
	got, err := a.AnalyzeMedia(context.Background(), domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, nil, compile(t, policy(v)))
	require.NoError(t, err)
	require.Equal(t, "none", got.TranscriptSource)
	require.Empty(t, got.Chunks)
	require.Equal(t, []domain.TimedHit{
		{Label: "KnownBad", Kind: domain.MediaVideo, Score: 1, StartMs: 2000, FrameStartMs: msp(2000), FrameEndMs: msp(4000)},
	}, got.Hits)
}

// blockingPrecheck blocks the frame whose PDQ is on its list.
type blockingPrecheck struct {
	bad  imaging.Hash
	seen []domain.FrameSegment
}

var errBlocked = errors.New("blocked by the hash list")

func (p *blockingPrecheck) PrecheckFrame(_ context.Context, f domain.VideoFrame) error {
	p.seen = append(p.seen, f.Segment)
	if imaging.Hash(f.Features.PDQ).Distance(p.bad) <= 10 {
		return errBlocked
	}
	return nil
}

func (p *blockingPrecheck) PrecheckMatches() []rules.PrecheckMatch { return nil }

func TestAnalyzeVideoPrecheckBlocks(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	v := makeVideo(t, tools, false)
	a := newAnalyzer(t, tools, Config{}, nil)
	pre := &blockingPrecheck{bad: v.knownBad}
	_, err := a.AnalyzeMedia(context.Background(), domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, pre, compile(t, policy(v)))
	require.ErrorIs(t, err, errBlocked)
	require.Equal(t, []domain.FrameSegment{{StartMs: 0, EndMs: 2000}, {StartMs: 2000, EndMs: 4000}}, pre.seen,
		"frames are prechecked in order and the job stops at the blocked one")
}

func TestAnalyzeAudioWithCaptions(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	path := filepath.Join(t.TempDir(), "tone.m4a")
	ffmpeg(t, tools, "-f", "lavfi", "-i", "sine=f=440:d=3", "-c:a", "aac", path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	a := newAnalyzer(t, tools, Config{}, nil)
	got, err := a.AnalyzeMedia(context.Background(), domain.MediaInput{
		Kind: domain.MediaAudio, Data: data, HasCaptions: true,
		Captions: "WEBVTT\n\n00:00.250 --> 00:01.750\nthey will kill\n\n00:02.000 --> 00:02.900\nsunny\n",
	}, nil, compile(t, `LABEL "Violence" { =("kill") }`))
	require.NoError(t, err)
	require.Equal(t, domain.MediaAudio, got.Kind)
	require.Empty(t, got.Segments)
	require.Equal(t, []domain.TimedHit{
		{Label: "Violence", Kind: domain.MediaAudio, Score: 1, StartMs: 250, EndMs: msp(1750),
			Spans: []rules.TextSpan{{Start: 10, End: 14, Text: "kill", Transcript: &rules.TimeRange{StartMs: 250, EndMs: 1750}}}},
	}, got.Hits)
}

func TestAnalyzeAudioASR(t *testing.T) {
	t.Parallel()
	tools := requireASR(t)
	eval := compile(t, `LABEL "Travel" { =("forward") }`)

	t.Run("a tone has no words", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "tone.wav")
		ffmpeg(t, tools, "-f", "lavfi", "-i", "sine=f=440:d=2", path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		got, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(context.Background(),
			domain.MediaInput{Kind: domain.MediaAudio, Data: data}, nil, eval)
		require.NoError(t, err)
		require.Equal(t, "asr", got.TranscriptSource)
		require.Empty(t, got.Chunks)
		require.Empty(t, got.Hits)
		require.Equal(t, rules.OutcomeFalse, got.Report.Result)
	})

	// Real speech: the sample of Debian's pocketsphinx-testdata, when it is
	// installed (it is not part of make media-tools).
	const speech = "/usr/share/pocketsphinx/test/data/goforward.raw"
	if _, err := os.Stat(speech); err != nil {
		t.Log("pocketsphinx-testdata not installed: the speech sample is not tested")
		return
	}
	t.Run("speech is chunked and hit", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "speech.wav")
		// 3 s of silence, then "go forward ten meters".
		ffmpeg(t, tools, "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono:d=3",
			"-f", "s16le", "-ar", "16000", "-ac", "1", "-i", speech,
			"-filter_complex", "[0][1]concat=n=2:v=0:a=1", path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		got, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(context.Background(),
			domain.MediaInput{Kind: domain.MediaAudio, Data: data}, nil, eval)
		require.NoError(t, err)
		require.Equal(t, "asr", got.TranscriptSource)
		require.Len(t, got.Chunks, 1)
		c := got.Chunks[0]
		// The recogniser may hear a word or two in the digital silence; the
		// sentence itself must be there, ending where the sample ends.
		require.Contains(t, c.Text, "go forward ten meters")
		require.LessOrEqual(t, c.EndMs-c.StartMs, int64(MaxASRChunkMs))
		require.InDelta(t, 5100, c.EndMs, 300)
		require.Equal(t, []domain.TimedHit{
			{Label: "Travel", Kind: domain.MediaAudio, Score: 1, StartMs: c.StartMs, EndMs: msp(c.EndMs)},
		}, got.Hits)
	})
}

func TestAnalyzeFailures(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	v := makeVideo(t, tools, false)
	eval := compile(t, policy(v))
	ctx := context.Background()
	garbage := make([]byte, 64<<10)
	_, _ = rand.Read(garbage)

	t.Run("corrupt file", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: garbage}, nil, eval)
		require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
	})
	t.Run("truncated video", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data[:len(v.data)/3]}, nil, eval)
		require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
	})
	t.Run("audio submitted as video", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "a.wav")
		ffmpeg(t, tools, "-f", "lavfi", "-i", "sine=d=1", path)
		data, _ := os.ReadFile(path)
		_, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: data}, nil, eval)
		require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
	})
	t.Run("uploaded playlist is refused before ffmpeg reads it", func(t *testing.T) {
		t.Parallel()
		pl := []byte("#EXTM3U\n#EXTINF:1,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n")
		_, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: pl}, nil, eval)
		require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
	})
	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, tools, Config{MaxBytes: 1000}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, nil, eval)
		require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
	})
	t.Run("too long", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, tools, Config{MaxDuration: 5 * time.Second}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, nil, eval)
		require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
	})
	t.Run("scene ceiling", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, tools, Config{SceneCeiling: 2}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, nil, eval)
		require.Equal(t, domain.ReasonVideoSceneCeilingExceeded, reasonOf(t, err))
	})
	t.Run("ceiling equal to the scene count passes", func(t *testing.T) {
		t.Parallel()
		got, err := newAnalyzer(t, tools, Config{SceneCeiling: 3}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, nil, eval)
		require.NoError(t, err)
		require.Len(t, got.Segments, 3)
	})
	t.Run("bad captions", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{
			Kind: domain.MediaVideo, Data: v.data, HasCaptions: true,
			Captions: "WEBVTT\n\n00:00:01,000 --> 00:00:02,000\nSRT timing\n"}, nil, eval)
		require.Equal(t, domain.ReasonTranscriptArtifactInvalid, reasonOf(t, err))
	})
	t.Run("audio without captions and without speech recognition", func(t *testing.T) {
		t.Parallel()
		noASR := tools
		noASR.Pocketsphinx = ""
		_, err := newAnalyzer(t, noASR, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaAudio, Data: v.data}, nil, eval)
		require.Equal(t, domain.ReasonJobFailed, reasonOf(t, err))
		me, _ := domain.MediaErrorOf(err)
		require.Contains(t, me.Message, "pocketsphinx")
	})
	t.Run("tools missing", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, Tools{}, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, nil, eval)
		require.Equal(t, domain.ReasonJobFailed, reasonOf(t, err))
		me, _ := domain.MediaErrorOf(err)
		require.Contains(t, me.Message, "ffmpeg")
	})
	t.Run("cancelled context is returned as is", func(t *testing.T) {
		t.Parallel()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(cctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data}, nil, eval)
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("evaluation error is returned as is", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("backend down")
		_, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, Data: v.data},
			nil, func(context.Context, rules.Content) (*rules.Report, error) { return nil, boom })
		require.ErrorIs(t, err, boom)
	})
}
