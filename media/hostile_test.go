package media

import (
	"context"
	"encoding/base64"
	"errors"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// secretFiles are files on the server's disk that no customer input may
// make ffmpeg read: a video whose middle scene the policy's HASH rule knows
// (so frames read from it would show up as a KnownBad hit), the same as
// MPEG-TS (which the hls demuxer reads without seeking), PNG frames of that
// scene for image2 patterns, and a playlist that names the video.
type secretFiles struct {
	v        testVideo
	video    string // the video, an absolute path
	ts       string // the video as MPEG-TS
	pattern  string // an image2 pattern matching the frames
	playlist string // an HLS playlist naming the video by absolute path
	png      []byte // one of the frames
}

func makeSecrets(t *testing.T, tools Tools) secretFiles {
	t.Helper()
	v := makeVideo(t, tools, true)
	dir := t.TempDir()
	s := secretFiles{v: v, video: filepath.Join(dir, "secret.mp4"), ts: filepath.Join(dir, "secret.ts"),
		pattern: filepath.Join(dir, "frame-%03d.png"), playlist: filepath.Join(dir, "secret.m3u8")}
	require.NoError(t, os.WriteFile(s.video, v.data, 0o600))
	ffmpeg(t, tools, "-i", s.video, "-c", "copy", "-f", "mpegts", s.ts)
	ffmpeg(t, tools, "-ss", "2", "-i", s.video, "-frames:v", "3", s.pattern)
	var err error
	s.png, err = os.ReadFile(strings.Replace(s.pattern, "%03d", "002", 1))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.playlist,
		[]byte("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:5.6,\n"+s.ts+"\n#EXT-X-ENDLIST\n"), 0o600))
	return s
}

// named is a test input with its name.
type named[T any] struct {
	name string
	v    T
}

// refs are the ways a referencing format can name the secret: as a path, as
// file: URLs, through the protocols that wrap another (subfile, tee, crypto,
// concat), inline as a data: URL, as an image2 pattern, and by a playlist.
func (s secretFiles) refs() []named[string] {
	return []named[string]{
		{"path", s.video},
		{"file URL", "file://" + s.video},
		{"file: URL", "file:" + s.video},
		{"subfile", "subfile,,start,0,end,0,,:" + s.video},
		{"tee", "tee:" + s.video},
		{"crypto", "crypto+file:" + s.video},
		{"concat", "concat:" + s.video + "|" + s.video},
		{"data", "data:image/png;base64," + base64.StdEncoding.EncodeToString(s.png)},
		{"image2", s.pattern},
		{"playlist", s.playlist},
	}
}

// hostileFormats build, for a reference, the bytes of each format whose
// demuxer opens other files or URLs (or, for the PNG, an image format: an
// image2 pipe, not a container).
func hostileFormats(s secretFiles) []named[func(ref string) []byte] {
	return []named[func(string) []byte]{
		{"DASH", func(ref string) []byte {
			return []byte(`<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011" type="static" mediaPresentationDuration="PT5.6S" minBufferTime="PT1S">
 <Period>
  <AdaptationSet mimeType="video/mp4">
   <Representation id="1" bandwidth="100000" width="320" height="240" codecs="avc1.42c00d">
    <BaseURL>` + html.EscapeString(ref) + `</BaseURL>
   </Representation>
  </AdaptationSet>
 </Period>
</MPD>
`)
		}},
		{"HLS", func(ref string) []byte {
			return []byte("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:5.6,\n" + ref + "\n#EXT-X-ENDLIST\n")
		}},
		{"DASH with XML declaration", func(ref string) []byte {
			return []byte(`<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" mediaPresentationDuration="PT5.6S">
 <Period><AdaptationSet><Representation id="v" bandwidth="1" codecs="avc1.42c00d"><BaseURL>` + html.EscapeString(ref) + `</BaseURL></Representation></AdaptationSet></Period>
</MPD>
`)
		}},
		{"HLS master", func(ref string) []byte {
			return []byte("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n" + ref + "\n")
		}},
		{"HLS key and map", func(ref string) []byte {
			return []byte("#EXTM3U\n#EXT-X-MAP:URI=\"" + ref + "\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"" + ref + "\"\n#EXTINF:5.6,\n" + ref + "\n")
		}},
		{"ffconcat", func(ref string) []byte {
			return []byte("ffconcat version 1.0\nfile '" + ref + "'\nfile " + ref + "\n")
		}},
		{"SDP", func(ref string) []byte {
			return []byte("v=0\no=- 0 0 IN IP4 127.0.0.1\ns=" + ref + "\nc=IN IP4 127.0.0.1\nt=0 0\nm=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\n")
		}},
		{"PNG image", func(string) []byte { return s.png }},
	}
}

// hostilePrefixes are put in front of each hostile input: what a sniffer of
// the first bytes has to see through.
var hostilePrefixes = []named[string]{
	{"XML comment", "<!-- a comment -->\n"},
	{"nothing", ""},
	{"BOM", "\xEF\xBB\xBF"},
	{"whitespace", " \r\n\t\n"},
	{"BOM, space, XML comment", "\xEF\xBB\xBF \n<!--\n-->\n"},
	{"hash comment", "# a comment\n"},
	{"UTF-16 BOM", "\xFF\xFE"},
	{"NUL and newlines", "\x00\n\n"},
}

// hostileCase is one input of TestInlineMediaNeverOpensOtherFiles, as the
// bytes of each kind in kinds.
type hostileCase struct {
	name  string
	data  []byte
	kinds []domain.MediaKind
}

var bothKinds = []domain.MediaKind{domain.MediaVideo, domain.MediaAudio}

// hostileCases crosses every format with every prefix, the references and
// the kinds (video, audio) taking turns; and, for the formats that take any
// reference, adds every other reference with the first prefix, which no
// sniffer of the first bytes catches. (What kind the bytes are submitted as
// does not change what ffprobe does with them: each format is tried as
// both.)
func hostileCases(s secretFiles) []hostileCase {
	var cases []hostileCase
	refs := s.refs()
	for i, f := range hostileFormats(s) {
		for j, p := range hostilePrefixes {
			r := refs[(i+j)%len(refs)]
			if j == 0 {
				r = refs[0]
			}
			k := (i + j) % 2
			cases = append(cases, hostileCase{f.name + "/" + p.name + "/" + r.name, append([]byte(p.v), f.v(r.v)...), bothKinds[k : k+1]})
		}
		if f.name != "DASH" && f.name != "HLS" && f.name != "ffconcat" {
			continue
		}
		for k, r := range refs[1:] {
			cases = append(cases, hostileCase{f.name + "/" + hostilePrefixes[0].name + "/" + r.name,
				append([]byte(hostilePrefixes[0].v), f.v(r.v)...), bothKinds[k%2 : k%2+1]})
		}
	}
	return cases
}

// TestMediaNeverOpensServerFiles replays an attack a review found (a HASH rule
// matched frames of a file on the server's disk, read by ffmpeg through an
// inline DASH manifest behind an XML comment), with the real ffprobe and
// ffmpeg, against files of the server's that the inputs name.
func TestMediaNeverOpensServerFiles(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	s := makeSecrets(t, tools)
	t.Run("inline", func(t *testing.T) { t.Parallel(); testInlineMediaNeverOpensOtherFiles(t, tools, s) })
	t.Run("tools", func(t *testing.T) { t.Parallel(); testToolsOpenOnlyContainers(t, tools, s) })
	t.Run("HLS by URL", func(t *testing.T) { t.Parallel(); testHLSByURLNeverOpensLocalFiles(t, tools, s) })
}

// testInlineMediaNeverOpensOtherFiles: inline video or audio bytes that are
// a manifest, playlist, concat script, SDP file or image fail validation,
// whatever is in front of them, and never make ffmpeg read the file they
// name.
func testInlineMediaNeverOpensOtherFiles(t *testing.T, tools Tools, s secretFiles) {
	eval := compile(t, policy(s.v))
	ctx := context.Background()
	for _, c := range hostileCases(s) {
		for _, kind := range c.kinds {
			t.Run(c.name+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				got, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(ctx, domain.MediaInput{
					Kind: kind, Data: c.data, Captions: captions, HasCaptions: true}, nil, eval)
				if err == nil {
					t.Fatalf("accepted: %d ms, %d segments, hits %+v: ffmpeg read a file the input names", got.DurationMs, len(got.Segments), got.Hits)
				}
				require.Equal(t, domain.ReasonVideoValidationFailure, reasonOf(t, err))
			})
		}
	}
}

// testToolsOpenOnlyContainers: every run of ffprobe and ffmpeg on a staged
// file refuses the referencing formats by itself, with no sniffing in
// front, on the plain forms that sniffReferencing would have caught.
func testToolsOpenOnlyContainers(t *testing.T, tools Tools, s secretFiles) {
	a := New(Config{}, tools, nil)
	ctx := context.Background()
	for _, f := range hostileFormats(s) {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "input")
			require.NoError(t, os.WriteFile(path, f.v(s.video), 0o600))
			_, err := a.probe(ctx, path)
			require.Error(t, err, "ffprobe")
			// The later runs, were the probe ever to let such a file by,
			// whether or not they force a demuxer.
			for _, demuxer := range []string{"", "mov"} {
				err := a.scanScenes(ctx, path, demuxer, 5600, func(domain.FrameSegment, sampledFrame) error {
					return errors.New("a frame was decoded")
				})
				require.Error(t, err, "the scene pass")
				require.NotContains(t, err.Error(), "a frame was decoded")
			}
			require.Error(t, decodeAudio(ctx, a, path, ""), "the audio decode of speech recognition")
		})
	}
}

// testHLSByURLNeverOpensLocalFiles: an HLS stream by URL is downloaded
// through the fetcher and remuxed from a local copy of its playlist; nothing
// in the customer's playlist or segments may make that remux open a file of
// the server's: tags the playlist rewriter does not know (EXT-X-MEDIA
// renditions), lines hidden from a line splitter behind a lone CR or a NUL
// (before the fix, these two read the server's file), an attribute given
// twice, or a segment whose bytes are themselves a playlist, manifest or
// concat script.
func testHLSByURLNeverOpensLocalFiles(t *testing.T, tools Tools, s secretFiles) {
	eval := compile(t, policy(s.v))
	ctx := context.Background()

	// A harmless 2 s stream for the playlists to list besides.
	hlsDir := t.TempDir()
	ffmpeg(t, tools, "-f", "lavfi", "-i", "color=c=blue:s=320x240:r=25:d=2", "-c:v", "libx264", "-preset", "ultrafast",
		"-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
		"-hls_segment_filename", filepath.Join(hlsDir, "seg%03d.ts"), filepath.Join(hlsDir, "index.m3u8"))
	dash := hostileFormats(s)[0].v(s.ts)
	const head = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n"
	playlists := map[string]string{
		"rendition":         head + "#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID=\"v\",NAME=\"v\",DEFAULT=YES,AUTOSELECT=YES,URI=\"file://" + s.playlist + "\"\n#EXTINF:2,\nseg000.ts\n#EXT-X-ENDLIST\n",
		"rendition path":    head + "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"a\",URI=\"" + s.playlist + "\"\n#EXTINF:2,\nseg000.ts\n#EXT-X-ENDLIST\n",
		"lone CR":           head + "#EXT-X-DISCONTINUITY-SEQUENCE:0\r#EXTINF:5.6,\r" + s.ts + "\r#EXTINF:2,\nseg000.ts\n#EXT-X-ENDLIST\n",
		"lone CR file URL":  head + "#EXT-X-PROGRAM-DATE-TIME:x\r#EXTINF:5.6,\rfile://" + s.ts + "\n#EXTINF:2,\nseg000.ts\n#EXT-X-ENDLIST\n",
		"map URI twice":     head + "#EXT-X-MAP:URI=\"seg000.ts\",URI=\"" + s.ts + "\"\n#EXTINF:2,\nseg000.ts\n#EXT-X-ENDLIST\n",
		"key URI twice":     head + "#EXT-X-KEY:METHOD=NONE,URI=\"seg000.ts\",URI=\"" + s.ts + "\"\n#EXTINF:2,\nseg000.ts\n#EXT-X-ENDLIST\n",
		"NUL":               head + "#EXT-X-ALLOW-CACHE:YES\x00#EXTINF:5.6,\x00" + s.ts + "\x00#EXTINF:2,\nseg000.ts\n#EXT-X-ENDLIST\n",
		"segment is HLS":    head + "#EXTINF:5.6,\nhls.ts\n#EXT-X-ENDLIST\n",
		"segment is DASH":   head + "#EXTINF:5.6,\ndash.ts\n#EXT-X-ENDLIST\n",
		"segment is concat": head + "#EXTINF:5.6,\nconcat.ts\n#EXT-X-ENDLIST\n",
	}
	mux := http.NewServeMux()
	mux.Handle("/seg000.ts", http.FileServer(http.Dir(hlsDir)))
	mux.HandleFunc("/hls.ts", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:5.6,\n" + s.ts + "\n#EXT-X-ENDLIST\n"))
	})
	mux.HandleFunc("/dash.ts", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(dash) })
	mux.HandleFunc("/concat.ts", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ffconcat version 1.0\nfile '" + s.ts + "'\n"))
	})
	for name, body := range playlists {
		mux.HandleFunc("/"+strings.ReplaceAll(name, " ", "-")+".m3u8", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
			_, _ = w.Write([]byte(body))
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	names := slices.Sorted(maps.Keys(playlists))
	for i, name := range names {
		for _, kind := range bothKinds[i%2 : i%2+1] {
			t.Run(name+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				got, err := newAnalyzer(t, tools, Config{}, privateFetcher()).AnalyzeMedia(ctx, domain.MediaInput{
					Kind: kind, URL: srv.URL + "/" + strings.ReplaceAll(name, " ", "-") + ".m3u8", Captions: captions, HasCaptions: true}, nil, eval)
				if err != nil {
					// Refused, or the resource was looked for where a
					// playlist's references are: on the customer's server.
					require.Contains(t, []domain.JobErrorReason{domain.ReasonVideoValidationFailure, domain.ReasonVideoSourceUnreachable}, reasonOf(t, err))
					return
				}
				// Only the harmless segment may have been analysed.
				for _, h := range got.Hits {
					require.NotEqual(t, "KnownBad", h.Label, "a frame of the server's file was analysed")
				}
				require.LessOrEqual(t, got.DurationMs, int64(2100), "the remux read more than the stream's own segment")
			})
		}
	}
}

// TestContainersAccepted: the demuxer allowlist keeps every container we
// accept readable — probed with the allowlist, then decoded with the
// demuxer the probe named forced.
func TestContainersAccepted(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	a := New(Config{}, tools, nil)
	ctx := context.Background()
	video := []string{"-f", "lavfi", "-i", "testsrc=s=64x48:r=10:d=1", "-f", "lavfi", "-i", "sine=d=1", "-shortest"}
	audio := []string{"-f", "lavfi", "-i", "sine=d=1"}
	for _, c := range []struct {
		file, demuxer string
		input         []string
		args          []string
	}{ // (the video inputs have sound too)
		{"a.mp4", "mov", video, []string{"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"}},
		{"a.mkv", "matroska", video, []string{"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"}},
		{"a.webm", "matroska", video, []string{"-c:v", "libvpx", "-deadline", "realtime", "-c:a", "libopus"}},
		{"a.avi", "avi", video, []string{"-c:v", "mpeg4", "-c:a", "mp2"}},
		{"a.flv", "flv", video, []string{"-c:v", "flv", "-c:a", "aac"}},
		{"a.ts", "mpegts", video, []string{"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"}},
		{"a.mpg", "mpeg", video, []string{"-c:v", "mpeg2video", "-c:a", "mp2", "-f", "vob"}},
		{"a.ogv", "ogg", video, []string{"-c:v", "libtheora", "-c:a", "libvorbis"}},
		{"a.wmv", "asf", video, []string{"-c:v", "wmv2", "-c:a", "wmav2"}},
		{"a.wav", "wav", audio, nil},
		{"a.w64", "w64", audio, nil},
		{"a.aiff", "aiff", audio, nil},
		{"a.caf", "caf", audio, nil},
		{"a.mp3", "mp3", audio, []string{"-c:a", "libmp3lame"}},
		{"a.aac", "aac", audio, []string{"-c:a", "aac", "-f", "adts"}},
		{"a.m4a", "mov", audio, []string{"-c:a", "aac"}},
		{"a.flac", "flac", audio, nil},
		{"a.ogg", "ogg", audio, []string{"-c:a", "libvorbis"}},
		{"a.opus", "ogg", audio, []string{"-c:a", "libopus"}},
		{"a.ac3", "ac3", audio, nil},
		{"a.eac3", "eac3", audio, nil},
		{"a.wma", "asf", audio, []string{"-c:a", "wmav2"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), c.file)
			ffmpeg(t, tools, append(append(append([]string{}, c.input...), c.args...), path)...)
			pr, err := a.probe(ctx, path)
			require.NoError(t, err)
			require.Equal(t, c.demuxer, pr.Demuxer)
			require.True(t, pr.HasAudio)
			require.Equal(t, len(c.input) == len(video), pr.HasVideo)
			if pr.HasVideo {
				frames := 0
				require.NoError(t, a.scanScenes(ctx, path, pr.Demuxer, pr.DurationMs, func(domain.FrameSegment, sampledFrame) error {
					frames++
					return nil
				}))
				require.Positive(t, frames)
			} else {
				require.NoError(t, decodeAudio(ctx, a, path, pr.Demuxer))
			}
		})
	}
}

// TestHLSByURLForms: the rewritten playlist keeps what the remux needs of
// the forms ffmpeg's own HLS muxer writes: MPEG-TS segments, fragmented MP4
// with an init section (EXT-X-MAP), AES-128 with a key file and an IV, and
// byte ranges of one file.
func TestHLSByURLForms(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	src := filepath.Join(t.TempDir(), "src.mp4")
	ffmpeg(t, tools, "-f", "lavfi", "-i", "testsrc=s=160x120:r=10:d=3", "-f", "lavfi", "-i", "sine=d=3", "-shortest",
		"-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-c:a", "aac", src)
	root := t.TempDir()
	keyDir := filepath.Join(root, "aes")
	require.NoError(t, os.Mkdir(keyDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(keyDir, "k.bin"), []byte("0123456789abcdef"), 0o600))
	keyInfo := filepath.Join(t.TempDir(), "keyinfo")
	require.NoError(t, os.WriteFile(keyInfo, []byte("k.bin\n"+filepath.Join(keyDir, "k.bin")+"\n00112233445566778899aabbccddeeff\n"), 0o600))
	forms := map[string][]string{
		"ts":         {"-hls_segment_filename", filepath.Join(root, "ts", "s%d.ts")},
		"fmp4":       {"-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename", filepath.Join(root, "fmp4", "s%d.m4s")},
		"aes":        {"-hls_key_info_file", keyInfo, "-hls_segment_filename", filepath.Join(root, "aes", "s%d.ts")},
		"byte range": {"-hls_flags", "single_file"},
	}
	for name, args := range forms {
		dir := filepath.Join(root, strings.ReplaceAll(name, " ", "-"))
		require.NoError(t, os.MkdirAll(dir, 0o700))
		ffmpeg(t, tools, append(append([]string{"-i", src, "-c", "copy", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod"}, args...),
			filepath.Join(dir, "index.m3u8"))...)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	t.Cleanup(srv.Close)
	eval := compile(t, `LABEL "Violence" { =("kill") }`)
	for name := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := newAnalyzer(t, tools, Config{}, privateFetcher()).AnalyzeMedia(context.Background(), domain.MediaInput{
				Kind: domain.MediaVideo, URL: srv.URL + "/" + strings.ReplaceAll(name, " ", "-") + "/index.m3u8",
				Captions: "WEBVTT\n\n00:00.500 --> 00:01.000\nkill\n", HasCaptions: true}, nil, eval)
			require.NoError(t, err)
			require.InDelta(t, 3000, got.DurationMs, 100)
			require.NotEmpty(t, got.Segments)
			require.Len(t, got.Hits, 1)
		})
	}
}

// decodeAudio runs the decode of speech recognition (recognise) without the
// recogniser, which is not what is tested and costs seconds to load.
func decodeAudio(ctx context.Context, a *Analyzer, path, demuxer string) error {
	return a.run.run(ctx, command{path: a.tools.FFmpeg, args: asrDecodeArgs(path, demuxer), stdout: io.Discard, maxStdout: 64 << 20})
}
