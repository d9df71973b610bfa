package media

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

func TestChunkWords(t *testing.T) {
	t.Parallel()
	w := func(s, e int64, text string) Word { return Word{StartMs: s, EndMs: e, Text: text} }
	for _, tc := range []struct {
		name  string
		words []Word
		want  []ch
	}{
		{name: "none"},
		{name: "one word", words: []Word{w(100, 400, "go")}, want: []ch{{100, 400, "go"}}},
		{
			name:  "fits in one chunk: from first start to last end",
			words: []Word{w(3470, 3640, "go"), w(3650, 4170, "forward"), w(4180, 4530, "ten"), w(4540, 5120, "meters")},
			want:  []ch{{3470, 5120, "go forward ten meters"}},
		},
		{
			name:  "exactly 10 s stays one chunk",
			words: []Word{w(0, 5000, "a"), w(5000, 10_000, "b")},
			want:  []ch{{0, 10_000, "a b"}},
		},
		{
			name:  "a word that would pass 10 s starts the next chunk",
			words: []Word{w(0, 4000, "a"), w(4000, 9000, "b"), w(9000, 10_001, "c"), w(10_500, 11_000, "d")},
			want:  []ch{{0, 9000, "a b"}, {9000, 11_000, "c d"}},
		},
		{
			name:  "an overlong word is a chunk of its own",
			words: []Word{w(0, 1000, "a"), w(1000, 13_000, "loooong"), w(13_000, 14_000, "b")},
			want:  []ch{{0, 1000, "a"}, {1000, 13_000, "loooong"}, {13_000, 14_000, "b"}},
		},
		{
			name:  "long speech: every chunk at most 10 s",
			words: []Word{w(0, 3000, "a"), w(3000, 6000, "b"), w(6000, 9000, "c"), w(9000, 12_000, "d"), w(12_000, 15_000, "e"), w(15_000, 18_000, "f"), w(18_000, 21_000, "g")},
			want:  []ch{{0, 9000, "a b c"}, {9000, 18_000, "d e f"}, {18_000, 21_000, "g"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, chunksOf(tc.want), ChunkWords(tc.words, MaxASRChunkMs))
		})
	}
}

func TestParsePocketsphinx(t *testing.T) {
	t.Parallel()
	out := `
go forward ten meters
<s> 2.880 3.010 0.999700
<sil> 3.020 3.250 0.999300
go 3.470 3.640 0.997303
forward(2) 3.650 4.170 0.996207
[NOISE] 4.171 4.175 0.5
++GARBAGE++ 4.175 4.178 0.5
ten 4.180 4.530 0.243981
meters 4.540 5.120 0.806360
</s> 5.130 5.610 1.000000
one two three four
`
	words, err := parsePocketsphinx(strings.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, []Word{{3470, 3640, "go"}, {3650, 4170, "forward"}, {4180, 4530, "ten"}, {4540, 5120, "meters"}}, words)
}

func TestParseShowinfoPTS(t *testing.T) {
	t.Parallel()
	got, ok := parseShowinfoPTS("[Parsed_showinfo_2 @ 0x55e5ed877780] n:   0 pts:  25600 pts_time:2       pos:     1624 fmt:yuv420p")
	require.True(t, ok)
	require.Equal(t, int64(2000), got)
	got, ok = parseShowinfoPTS("[Parsed_showinfo_1 @ 0x1] n:  12 pts: 1 pts_time:83.4567 pos: 1")
	require.True(t, ok)
	require.Equal(t, int64(83457), got)
	for _, l := range []string{
		"[Parsed_showinfo_2 @ 0x55e5ed877780] config in time_base: 1/12800, frame_rate: 25/1",
		"[Parsed_showinfo_2 @ 0x1] color_range:unknown",
		"frame=    1 fps=0.0 q=-0.0 size=N/A time=00:00:02.04",
		"[Parsed_showinfo_2 @ 0x1] n: 0 pts: 1 pts_time:nan pos: 1",
		"[Parsed_showinfo_2 @ 0x1] n: 0 pts: 1 pts_time:",
	} {
		_, ok := parseShowinfoPTS(l)
		require.False(t, ok, l)
	}
}

func TestParseProbe(t *testing.T) {
	t.Parallel()
	r, err := parseProbe([]byte(`{"format":{"format_name":"mov,mp4","duration":"5.600000"},"streams":[
		{"codec_type":"video","codec_name":"h264","width":320,"height":240,"disposition":{"attached_pic":0}},
		{"codec_type":"audio","codec_name":"aac"}]}`))
	require.NoError(t, err)
	require.Equal(t, probeResult{FormatName: "mov,mp4", Demuxer: "mov", DurationMs: 5600, HasVideo: true, HasAudio: true, Width: 320, Height: 240}, r)

	// An MP3 with cover art is audio only; the duration may come from the
	// stream.
	r, err = parseProbe([]byte(`{"format":{"format_name":"mp3","duration":"N/A"},"streams":[
		{"codec_type":"audio","codec_name":"mp3","duration":"3.0005"},
		{"codec_type":"video","codec_name":"mjpeg","width":500,"height":500,"disposition":{"attached_pic":1}}]}`))
	require.NoError(t, err)
	require.Equal(t, probeResult{FormatName: "mp3", Demuxer: "mp3", DurationMs: 3001, HasAudio: true}, r)

	// Only container formats: a manifest, playlist, concat script, image
	// or raw stream is refused even when ffprobe found streams in it.
	for _, f := range []string{"dash", "hls", "concat", "sdp", "image2", "png_pipe", "lavfi", "webm_dash_manifest", "h264", "tty", "", "mov2", "webm"} {
		_, err = parseProbe([]byte(`{"format":{"format_name":"` + f + `","duration":"1"},"streams":[{"codec_type":"video","width":2,"height":2}]}`))
		require.ErrorIs(t, err, errNotContainer, f)
	}

	_, err = parseProbe([]byte(`{"format":{"format_name":"tty","duration":"1"},"streams":[{"codec_type":"data"}]}`))
	require.ErrorIs(t, err, errNotMedia)
	_, err = parseProbe([]byte(`{"format":{"duration":"N/A"},"streams":[{"codec_type":"audio"}]}`))
	require.Error(t, err)
	// A duration that would wrap negative in milliseconds (and slip under
	// MaxDuration) is refused.
	_, err = parseProbe([]byte(`{"format":{"format_name":"matroska,webm","duration":"N/A"},"streams":[{"codec_type":"audio","duration":"9223372036854775807"}]}`))
	require.ErrorContains(t, err, "out of range")
	_, err = parseProbe([]byte(`not json`))
	require.Error(t, err)
}

func TestHLSHelpers(t *testing.T) {
	t.Parallel()
	require.True(t, isHLSURL("https://cdn.example/live/Index.M3U8?token=1"))
	require.False(t, isHLSURL("https://cdn.example/video.mp4?x=.m3u8"))
	require.True(t, isHLSResponse("application/vnd.apple.mpegurl; charset=utf-8", nil))
	require.True(t, isHLSResponse("text/plain", []byte("#EXTM3U\n")))
	require.False(t, isHLSResponse("video/mp4", []byte("\x00\x00\x00\x18ftypmp42")))

	master := `#EXTM3U
#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360,CODECS="avc1.4d401e,mp4a.40.2"
low/index.m3u8
#EXT-X-STREAM-INF:RESOLUTION=1280x720,BANDWIDTH=2500000
mid/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=1200000
other/index.m3u8
`
	v, err := hlsVariant(master)
	require.NoError(t, err)
	require.Equal(t, "mid/index.m3u8", v)
	v, err = hlsVariant("#EXTM3U\n#EXTINF:2,\nseg0.ts\n")
	require.NoError(t, err)
	require.Equal(t, "", v)
	_, err = hlsVariant("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n")
	require.Error(t, err)

	a, err := parseAttrs(`METHOD=AES-128,URI="https://k.example/key?id=1,2", IV=0x0123`)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"METHOD": "AES-128", "URI": "https://k.example/key?id=1,2", "IV": "0x0123"}, a)
	a, err = parseAttrs("AVERAGE-BANDWIDTH=1,BANDWIDTH=2500000")
	require.NoError(t, err)
	require.Equal(t, "2500000", a["BANDWIDTH"])
	for _, bad := range []string{
		`URI="a",URI="b"`, `URI="a",uri="b"`, `URI="a`, `URI="a"x`, `URI=a"b"`, `=1`, `URI`, `URI="a",`, `A B=1`,
	} {
		_, err := parseAttrs(bad)
		require.ErrorIs(t, err, errBadAttrs, bad)
	}
}

// TestRewriteHLS: the local playlist of the remux is written anew from the
// customer's: only the tags the remux needs, rebuilt, and local names.
func TestRewriteHLS(t *testing.T) {
	t.Parallel()
	resolve := func(ref, ext string, hashIt bool) (string, error) {
		return "[" + ref + ext + map[bool]string{true: " hashed"}[hashIt] + "]", nil
	}
	for _, tc := range []struct{ name, in, want, err string }{
		{
			name: "what ffmpeg's muxer writes",
			in: "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:4\n#EXT-X-PLAYLIST-TYPE:VOD\n" +
				"#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"800@0\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\",IV=0x0011\n" +
				"#EXTINF:1.000000,\n#EXT-X-BYTERANGE:100@800\ns0.m4s?x=1\n#EXT-X-DISCONTINUITY\n#EXT-X-KEY:METHOD=NONE\n#EXTINF:0.5,title\ns1.weird\n#EXT-X-ENDLIST\n",
			want: "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:4\n" +
				"#EXT-X-MAP:URI=\"[init.mp4.mp4]\",BYTERANGE=\"800@0\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"[k.bin.key]\",IV=0x0011\n" +
				"#EXTINF:1,\n#EXT-X-BYTERANGE:100@800\n[s0.m4s?x=1.m4s hashed]\n#EXT-X-DISCONTINUITY\n#EXT-X-KEY:METHOD=NONE\n#EXTINF:0.5,\n[s1.weird.ts hashed]\n#EXT-X-ENDLIST\n",
		},
		{
			name: "a live playlist gets the end tag; IPTV attributes and a BOM",
			in:   "\uFEFF#EXTM3U\r\n#EXTINF:-1 tvg-id=\"x\",Radio\r\nhttp://r.example/live.aac\r\n",
			want: "#EXTM3U\n#EXTINF:0,\n[http://r.example/live.aac.aac hashed]\n#EXT-X-ENDLIST\n",
		},
		{
			name: "renditions, variants and unknown tags are left out",
			in: "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",URI=\"file:///etc/secret.m3u8\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\n" +
				"#EXT-X-I-FRAME-STREAM-INF:URI=\"/etc/x.m3u8\"\n#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"/k\"\n#EXTINF:2,\ns.ts\n",
			want: "#EXTM3U\n#EXTINF:2,\n[s.ts.ts hashed]\n#EXT-X-ENDLIST\n",
		},
		{
			name: "a line behind a lone CR or a NUL is a line, as ffmpeg reads it",
			in:   "#EXTM3U\n#EXT-X-FOO:1\r#EXTINF:5.6,\r/srv/secret.ts\x00#EXTINF:2,x\x00/srv/other.ts\n",
			want: "#EXTM3U\n#EXTINF:5.6,\n[/srv/secret.ts.ts hashed]\n#EXTINF:2,\n[/srv/other.ts.ts hashed]\n#EXT-X-ENDLIST\n",
		},
		{name: "an attribute given twice", in: "#EXTM3U\n#EXT-X-MAP:URI=\"a.mp4\",URI=\"/srv/secret.mp4\"\n#EXTINF:2,\ns.ts\n", err: "given twice"},
		{name: "a key without URI", in: "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128\n#EXTINF:2,\ns.ts\n", err: "without URI"},
		{name: "an unknown key method", in: "#EXTM3U\n#EXT-X-KEY:METHOD=AES-256,URI=\"k\"\n#EXTINF:2,\ns.ts\n", err: "METHOD"},
		{name: "an IV that is not hex", in: "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x12\"\n#EXTINF:2,\ns.ts\n", err: "malformed"},
		{name: "a byte range that is not numbers", in: "#EXTM3U\n#EXTINF:2,\n#EXT-X-BYTERANGE:1@x\ns.ts\n", err: "BYTERANGE"},
		{name: "a duration that is not a number", in: "#EXTM3U\n#EXTINF:NaN,\ns.ts\n", err: "EXTINF"},
		{name: "no header", in: "#EXTINF:2,\ns.ts\n", err: "#EXTM3U"},
		{name: "no segment", in: "#EXTM3U\n#EXT-X-ENDLIST\n", err: "no segments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rewriteHLS(tc.in, resolve)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestToolsStatus(t *testing.T) {
	t.Parallel()
	none := Tools{}
	require.False(t, none.VideoReady())
	require.Equal(t, []string{"ffmpeg", "ffprobe"}, none.MissingForMedia())
	require.Contains(t, none.Status(), "video and audio evaluation unavailable: ffmpeg, ffprobe not found")
	noASR := Tools{FFmpeg: "/usr/bin/ffmpeg", FFprobe: "/usr/bin/ffprobe"}
	require.True(t, noASR.VideoReady())
	require.False(t, noASR.ASRReady())
	require.Contains(t, noASR.Status(), "speech recognition unavailable (pocketsphinx")
	noModel := noASR
	noModel.Pocketsphinx = "/usr/bin/pocketsphinx_continuous"
	require.Equal(t, []string{"the pocketsphinx en-us model (pocketsphinx-en-us)"}, noModel.MissingForASR())
	all := noModel
	all.PocketsphinxModel = "/m"
	require.Equal(t, "video and audio evaluation available, with speech recognition", all.Status())
}

// ch is a local stand-in for the domain type, so the tables can use
// positional literals.
type ch struct {
	s, e int64
	text string
}

func chunksOf(in []ch) []domain.TranscriptChunk {
	if in == nil {
		return nil
	}
	out := make([]domain.TranscriptChunk, len(in))
	for i, c := range in {
		out[i] = domain.TranscriptChunk{StartMs: c.s, EndMs: c.e, Text: c.text}
	}
	return out
}

func TestPNGSplitter(t *testing.T) {
	t.Parallel()
	// Minimal well-formed chunk streams: the splitter only walks chunk
	// lengths and types.
	chunk := func(typ string, data string) string {
		n := len(data)
		return string([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}) + typ + data + "CRC!"
	}
	png1 := string(pngSignature) + chunk("IHDR", "0123456789abc") + chunk("IDAT", strings.Repeat("x", 300)) + chunk("IEND", "")
	png2 := string(pngSignature) + chunk("IHDR", "abc") + chunk("IEND", "")
	stream := png1 + png2
	for _, step := range []int{1, 7, 8, 13, 100, len(stream)} {
		var got []string
		sp := &pngSplitter{max: 1 << 20, onPNG: func(b []byte) error { got = append(got, string(b)); return nil }}
		for i := 0; i < len(stream); i += step {
			n, err := sp.Write([]byte(stream[i:min(i+step, len(stream))]))
			require.NoError(t, err)
			require.Equal(t, min(step, len(stream)-i), n)
		}
		require.Equal(t, []string{png1, png2}, got, "step %d", step)
	}
	_, err := (&pngSplitter{max: 1 << 20, onPNG: func([]byte) error { return nil }}).Write([]byte("GIF89a.........."))
	require.Error(t, err)
	_, err = (&pngSplitter{max: 100, onPNG: func([]byte) error { return nil }}).Write([]byte(png1))
	require.ErrorIs(t, err, errOutputTooLarge)
	boom := errors.New("stop")
	_, err = (&pngSplitter{max: 1 << 20, onPNG: func([]byte) error { return boom }}).Write([]byte(png2))
	require.ErrorIs(t, err, boom)
}

func TestRemoveStaleStaging(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	mk := func(name string, age time.Duration) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Join(p, "sub"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(p, "sub", "input"), []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
	}
	mk(stagingPrefix+"old", 48*time.Hour)
	mk(stagingPrefix+"fresh", time.Minute)
	mk("someone-else", 48*time.Hour)
	n, err := RemoveStaleStaging(dir, 24*time.Hour, now)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{stagingPrefix + "fresh", "someone-else"}, names)
}
