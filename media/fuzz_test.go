package media

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fuzzSecrets stand in for secretFiles in the fuzz seeds: the hostile
// formats naming server paths, without ffmpeg to make real files.
var fuzzSecrets = secretFiles{
	video: "/etc/passwd", ts: "/var/lib/contenteval/secret.ts", pattern: "/tmp/frame-%03d.png",
	playlist: "/tmp/secret.m3u8", png: append(append([]byte{}, pngSignature...), "\x00\x00\x00\x00IEND\xaeB`\x82"...),
}

// hostileSeeds are the inputs of TestInlineMediaNeverOpensOtherFiles, with
// fuzzSecrets for the files.
func hostileSeeds() [][]byte {
	var seeds [][]byte
	for _, c := range hostileCases(fuzzSecrets) {
		seeds = append(seeds, c.data)
	}
	return seeds
}

// FuzzReferencingHead: the sniff of staged bytes never panics, sees through
// a BOM and whitespace, and catches the plain playlist, concat and manifest
// heads (the real refusal is the demuxer allowlist; this is the message).
func FuzzReferencingHead(f *testing.F) {
	for _, s := range hostileSeeds() {
		f.Add(s)
	}
	f.Add([]byte("\x00\x00\x00\x18ftypmp42"))
	f.Add([]byte("\x1aE\xdf\xa3"))
	f.Fuzz(func(t *testing.T, head []byte) {
		got := referencingHead(head)
		if bytes.HasPrefix(head, []byte("\xEF\xBB\xBF")) {
			return
		}
		for _, prefix := range []string{" ", "\r\n\t", "\xEF\xBB\xBF", "\xEF\xBB\xBF \n"} {
			if referencingHead(append([]byte(prefix), head...)) != got {
				t.Fatalf("a %q in front changes the verdict on %q", prefix, head)
			}
		}
		for _, p := range referencingFormats {
			if bytes.HasPrefix(bytes.ToLower(head), bytes.ToLower(p)) && !got {
				t.Fatalf("%q starts with %q and was not caught", head, p)
			}
		}
	})
}

// ffprobeSeeds are ffprobe outputs: real ones (an MP4, an MP3 with cover
// art, what ffprobe 5.1 printed for the DASH manifest that read a server file before the
// allowlist, an HLS playlist) and edge cases.
var ffprobeSeeds = []string{
	`{"programs":[],"streams":[{"codec_name":"h264","codec_type":"video","width":320,"height":240,"duration":"5.600000","disposition":{"attached_pic":0}},{"codec_name":"aac","codec_type":"audio","duration":"5.600000","disposition":{"attached_pic":0}}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","duration":"5.600000"}}`,
	`{"streams":[{"codec_type":"audio","codec_name":"mp3","duration":"3.0005"},{"codec_type":"video","codec_name":"mjpeg","width":500,"height":500,"disposition":{"attached_pic":1}}],"format":{"format_name":"mp3","duration":"N/A"}}`,
	`{"programs":[{"streams":[{"codec_type":"video","width":320,"height":240}]}],"streams":[{"codec_type":"video","width":320,"height":240}],"format":{"format_name":"dash","duration":"2.000000"}}`,
	`{"streams":[{"codec_type":"video","width":320,"height":240}],"format":{"format_name":"hls","duration":"5.6"}}`,
	`{"streams":[{"codec_type":"video","width":64,"height":48}],"format":{"format_name":"matroska,webm","duration":"1e308"}}`,
	`{"streams":[{"codec_type":"audio"}],"format":{"format_name":"wav","duration":"-1"}}`,
	`{"streams":[{"codec_type":"video","width":-1,"height":1}],"format":{"format_name":"image2","duration":"0.04"}}`,
	`{}`, `null`, `[]`, `{"format":{"format_name":1}}`,
}

// FuzzParseProbe: ffprobe's output never panics the parser, and whatever
// it accepts names a demuxer of the allowlist, a duration and a stream of
// the kind it reports.
func FuzzParseProbe(f *testing.F) {
	for _, s := range ffprobeSeeds {
		f.Add([]byte(s))
	}
	for _, d := range append(slices.Clone(containerDemuxers), "dash", "hls", "concat", "sdp", "image2", "lavfi", "tee", "data") {
		f.Add([]byte(`{"streams":[{"codec_type":"video","width":2,"height":2}],"format":{"format_name":"` + d + `","duration":"1"}}`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseProbe(b)
		if err != nil {
			return
		}
		if !slices.Contains(containerDemuxers, r.Demuxer) || containerDemuxer(r.FormatName) != r.Demuxer {
			t.Fatalf("accepted format %q as demuxer %q", r.FormatName, r.Demuxer)
		}
		if !r.HasVideo && !r.HasAudio {
			t.Fatal("accepted without streams")
		}
		if r.HasVideo != (r.Width > 0 && r.Height > 0) {
			t.Fatalf("video %v at %dx%d", r.HasVideo, r.Width, r.Height)
		}
		if r.DurationMs < 0 || r.DurationMs > maxProbeSeconds*1000 {
			t.Fatalf("negative duration %d", r.DurationMs)
		}
	})
}

// localPlaylistLine is every line rewriteHLS may write: the tags the remux
// needs, rebuilt from checked values, and the local names it was given.
var localPlaylistLine = regexp.MustCompile(`^(#EXTM3U|#EXTINF:[0-9]+(\.[0-9]+)?,|#EXT-X-BYTERANGE:[0-9]{1,18}(@[0-9]{1,18})?|` +
	`#EXT-X-(TARGETDURATION|MEDIA-SEQUENCE):[0-9]+|#EXT-X-DISCONTINUITY|#EXT-X-ENDLIST|#EXT-X-KEY:METHOD=NONE|` +
	`#EXT-X-KEY:METHOD=(AES-128|SAMPLE-AES),URI="(?P<key>r[0-9]{5}\.key)"(,IV=0[xX][0-9a-fA-F]{1,32})?|` +
	`#EXT-X-MAP:URI="(?P<map>r[0-9]{5}\.mp4)"(,BYTERANGE="[0-9]{1,18}(@[0-9]{1,18})?")?|` +
	`(?P<segment>r[0-9]{5}\.(ts|m4s|mp4|aac|m4a|m4v|mp3|ac3|ec3|vtt)))$`)

// hlsSeeds are playlists: what ffmpeg's HLS muxer writes (MPEG-TS,
// fragmented MP4, AES-128, byte ranges), a master, and the tricks of
// TestHLSByURLNeverOpensLocalFiles.
var hlsSeeds = []string{
	"#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:1.000000,\ns0.ts\n#EXTINF:1.000000,\ns1.ts\n#EXT-X-ENDLIST\n",
	"#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:1.000000,\ns0.m4s\n#EXT-X-ENDLIST\n",
	"#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\",IV=0x00112233445566778899aabbccddeeff\n#EXTINF:1.000000,\ns0.ts\n#EXT-X-ENDLIST\n",
	"#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.000000,\n#EXT-X-BYTERANGE:22560@0\nindex.ts\n#EXTINF:1.000000,\n#EXT-X-BYTERANGE:21996@22560\nindex.ts\n#EXT-X-ENDLIST\n",
	"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=100000\nlow.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=900000,CODECS=\"avc1.4d401e,mp4a.40.2\"\nhigh.m3u8\n",
	"#EXTM3U\n#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID=\"v\",NAME=\"v\",URI=\"file:///tmp/secret.m3u8\"\n#EXTINF:2,\nseg000.ts\n",
	"#EXTM3U\n#EXT-X-DISCONTINUITY-SEQUENCE:0\r#EXTINF:5.6,\r/tmp/secret.ts\r#EXTINF:2,\nseg000.ts\n",
	"#EXTM3U\n#EXT-X-ALLOW-CACHE:YES\x00#EXTINF:5.6,\x00/tmp/secret.ts\x00#EXTINF:2,\nseg000.ts\n",
	"#EXTM3U\n#EXT-X-MAP:URI=\"seg000.ts\",URI=\"/tmp/secret.ts\"\n#EXTINF:2,\nseg000.ts\n",
	"#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x1\"\n#EXTINF:2,\nseg000.ts\n",
	"\uFEFF#EXTM3U\n#EXTINF:-1,radio\nhttp://radio.example/stream.aac\n",
}

// FuzzRewriteHLS: the playlist parser never panics, and whatever local
// playlist it writes holds only the tags the remux needs, rebuilt, and the
// names the resolver gave — never a line, URI or attribute of the
// customer's — and is a fixed point of the rewrite.
func FuzzRewriteHLS(f *testing.F) {
	for _, s := range hlsSeeds {
		f.Add(s)
	}
	for _, c := range hostileCases(fuzzSecrets) {
		if strings.HasPrefix(c.name, "HLS") {
			f.Add(string(c.data))
		}
	}
	f.Fuzz(func(t *testing.T, playlist string) {
		_, _ = hlsVariant(playlist)
		given := map[string]bool{}
		out, err := rewriteHLS(playlist, func(ref, ext string, hashIt bool) (string, error) {
			name := fmt.Sprintf("r%05d%s", len(given)+1, ext)
			given[name] = true
			return name, nil
		})
		if err != nil {
			return
		}
		if !strings.HasPrefix(out, "#EXTM3U\n") || !strings.HasSuffix(out, "\n") {
			t.Fatalf("not a playlist: %q", out)
		}
		segments := 0
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			m := localPlaylistLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line %q of the local playlist is not one we write", l)
			}
			for _, group := range []string{"key", "map", "segment"} {
				if name := m[localPlaylistLine.SubexpIndex(group)]; name != "" && !given[name] {
					t.Fatalf("line %q names %s, which the resolver did not give", l, name)
				}
			}
			if m[localPlaylistLine.SubexpIndex("segment")] != "" {
				segments++
			}
		}
		if segments == 0 || !strings.Contains(out, "#EXT-X-ENDLIST\n") {
			t.Fatalf("no segment or no end: %q", out)
		}
		again, err := rewriteHLS(out, func(ref, ext string, hashIt bool) (string, error) { return ref, nil })
		if err != nil || again != out {
			t.Fatalf("the rewrite of %q is not a fixed point: %q, %v", out, again, err)
		}
	})
}
