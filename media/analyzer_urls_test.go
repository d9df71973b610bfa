package media

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/safehttp"
)

func privateFetcher() *safehttp.Client {
	return safehttp.New(safehttp.Config{AllowPrivate: true, MaxBytes: 64 << 20, Timeout: 10 * time.Second})
}

// mediaServer serves v as a video file, as HLS renditions (a playlist and
// a master playlist), and the sources that misbehave: a concat script, a
// 403, a source that never answers, a playlist whose segment never does.
func mediaServer(t *testing.T, tools Tools, v testVideo) *httptest.Server {
	t.Helper()
	// An HLS rendition of the test video, as a CDN would serve it.
	hlsDir := t.TempDir()
	ffmpeg(t, tools, "-i", v.path, "-c", "copy", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
		"-hls_segment_filename", filepath.Join(hlsDir, "seg%03d.ts"), filepath.Join(hlsDir, "index.m3u8"))
	require.NoError(t, os.WriteFile(filepath.Join(hlsDir, "master.m3u8"),
		[]byte("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=100000\nmissing.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=900000\nindex.m3u8\n"), 0o600))

	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	mux := http.NewServeMux()
	mux.Handle("/hls/", http.StripPrefix("/hls/", http.FileServer(http.Dir(hlsDir))))
	mux.HandleFunc("/video.mp4", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(v.data)
	})
	mux.HandleFunc("/concat.mp4", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ffconcat version 1.0\nfile /etc/passwd\n"))
	})
	mux.HandleFunc("/forbidden.mp4", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) })
	mux.HandleFunc("/stall.m3u8", func(w http.ResponseWriter, r *http.Request) {
		select { // a source that accepts the connection and never answers
		case <-r.Context().Done():
		case <-stall:
		}
	})
	mux.HandleFunc("/stall-segment.m3u8", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
		_, _ = w.Write([]byte("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nstall.m3u8?seg=1\n#EXT-X-ENDLIST\n"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestAnalyzeURLs(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	v := makeVideo(t, tools, true)
	eval := compile(t, policy(v))
	ctx := context.Background()

	srv := mediaServer(t, tools, v)

	wantSegments := []domain.FrameSegment{{StartMs: 0, EndMs: 2000}, {StartMs: 2000, EndMs: 4000}, {StartMs: 4000, EndMs: 5600}}

	t.Run("video URL", func(t *testing.T) {
		t.Parallel()
		got, err := newAnalyzer(t, tools, Config{}, privateFetcher()).AnalyzeMedia(ctx,
			domain.MediaInput{Kind: domain.MediaVideo, URL: srv.URL + "/video.mp4"}, nil, eval)
		require.NoError(t, err)
		require.Equal(t, sha(v.data), got.ContentHash)
		require.Equal(t, wantSegments, got.Segments)
	})
	for _, path := range []string{"/hls/index.m3u8", "/hls/master.m3u8"} {
		t.Run("HLS "+path, func(t *testing.T) {
			t.Parallel()
			got, err := newAnalyzer(t, tools, Config{}, privateFetcher()).AnalyzeMedia(ctx,
				domain.MediaInput{Kind: domain.MediaVideo, URL: srv.URL + path, Captions: captions, HasCaptions: true}, nil, eval)
			require.NoError(t, err)
			// The HLS muxer re-times the streams: in MPEG-TS the AAC
			// priming puts the audio ahead of the picture by a frame (23 ms
			// here), and the timeline starts with the audio. The cuts move
			// with the picture; they must stay within a few frames.
			require.Len(t, got.Segments, len(wantSegments))
			for i, s := range got.Segments {
				require.InDelta(t, wantSegments[i].StartMs, s.StartMs, 50, "segment %d", i)
				require.InDelta(t, wantSegments[i].EndMs, s.EndMs, 50, "segment %d", i)
			}
			require.Len(t, got.Hits, 3)
			require.Equal(t, domain.TimedHit{Label: "KnownBad", Kind: domain.MediaVideo, Score: got.Hits[1].Score,
				StartMs: got.Segments[1].StartMs, FrameStartMs: msp(got.Segments[1].StartMs), FrameEndMs: msp(got.Segments[1].EndMs)}, got.Hits[1])
			require.Greater(t, got.Hits[1].Score, 0.5)
		})
	}
	for name, url := range map[string]string{
		"404":                    srv.URL + "/nothing.mp4",
		"403":                    srv.URL + "/forbidden.mp4",
		"404 HLS":                srv.URL + "/hls/nothing.m3u8",
		"404 variant":            srv.URL + "/hls/missing-variant.m3u8",
		"connection refused":     "http://127.0.0.1:1/video.mp4",
		"not an http(s) URL":     "file:///etc/passwd",
		"unresolvable host":      "http://nonexistent.invalid/video.mp4",
		"private without opt-in": "",
	} {
		t.Run("unreachable "+name, func(t *testing.T) {
			t.Parallel()
			f := privateFetcher()
			if url == "" {
				// The default policy refuses loopback addresses (SSRF).
				f, url = safehttp.New(safehttp.Config{}), srv.URL+"/video.mp4"
			}
			_, err := newAnalyzer(t, tools, Config{}, f).AnalyzeMedia(ctx, domain.MediaInput{Kind: domain.MediaVideo, URL: url}, nil, eval)
			require.Equal(t, domain.ReasonVideoSourceUnreachable, reasonOf(t, err))
		})
	}
	t.Run("a concat script by URL is refused", func(t *testing.T) {
		t.Parallel()
		_, err := newAnalyzer(t, tools, Config{}, privateFetcher()).AnalyzeMedia(ctx,
			domain.MediaInput{Kind: domain.MediaVideo, URL: srv.URL + "/concat.mp4"}, nil, eval)
		require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
		me, _ := domain.MediaErrorOf(err)
		require.Equal(t, msgReferencing, me.Message)
	})
	for _, path := range []string{"/stall.m3u8", "/stall-segment.m3u8"} {
		t.Run("HLS remux timeout "+path, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := newAnalyzer(t, tools, Config{RemuxTimeout: 300 * time.Millisecond}, privateFetcher()).AnalyzeMedia(ctx,
				domain.MediaInput{Kind: domain.MediaVideo, URL: srv.URL + path}, nil, eval)
			require.Equal(t, domain.ReasonHLSRemuxTimeoutExhausted, reasonOf(t, err))
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}
