package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// probeResult is what the pipeline needs to know about an input file.
type probeResult struct {
	FormatName string
	DurationMs int64
	HasVideo   bool
	HasAudio   bool
	Width      int
	Height     int
}

// ffprobeOutput is the subset of `ffprobe -print_format json` we read.
type ffprobeOutput struct {
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
	} `json:"format"`
	Streams []struct {
		CodecType   string `json:"codec_type"`
		CodecName   string `json:"codec_name"`
		Width       int    `json:"width"`
		Height      int    `json:"height"`
		Duration    string `json:"duration"`
		Disposition struct {
			AttachedPic int `json:"attached_pic"`
		} `json:"disposition"`
	} `json:"streams"`
}

// errNotMedia is a file ffprobe reads but in which it finds nothing
// decodable of the kind asked for.
var errNotMedia = errors.New("no decodable stream")

// parseProbe interprets ffprobe's JSON. A cover picture (attached_pic) is
// not a video stream: an MP3 with album art is audio.
func parseProbe(b []byte) (probeResult, error) {
	var out ffprobeOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return probeResult{}, err
	}
	var r probeResult
	r.FormatName = out.Format.FormatName
	dur := parseSeconds(out.Format.Duration)
	for _, s := range out.Streams {
		switch s.CodecType {
		case "video":
			if s.Disposition.AttachedPic != 0 || s.Width <= 0 || s.Height <= 0 {
				continue
			}
			if !r.HasVideo {
				r.HasVideo, r.Width, r.Height = true, s.Width, s.Height
			}
		case "audio":
			r.HasAudio = true
		default:
			continue
		}
		if dur < 0 {
			dur = max(dur, parseSeconds(s.Duration))
		}
	}
	if !r.HasVideo && !r.HasAudio {
		return r, errNotMedia
	}
	if dur < 0 {
		return r, errors.New("the duration is unknown")
	}
	r.DurationMs = int64(math.Round(dur * 1000))
	return r, nil
}

// parseSeconds parses ffprobe's decimal seconds; -1 for "N/A" or garbage.
func parseSeconds(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return -1
	}
	return v
}

// probe runs ffprobe on a local file.
func (a *Analyzer) probe(ctx context.Context, path string) (probeResult, error) {
	var out bytes.Buffer
	err := a.run.run(ctx, command{
		path: a.tools.FFprobe,
		args: []string{"-hide_banner", "-v", "error", "-protocol_whitelist", "file",
			"-print_format", "json",
			"-show_entries", "format=format_name,duration:stream=codec_type,codec_name,width,height,duration:stream_disposition=attached_pic",
			path},
		timeout:   a.cfg.ProbeTimeout,
		stdout:    &out,
		maxStdout: 1 << 20,
	})
	if err != nil {
		return probeResult{}, err
	}
	return parseProbe(out.Bytes())
}

// referencingFormats are the text formats whose demuxers open other files or
// URLs named inside them (playlists, concat scripts, DASH manifests). A
// customer's upload must never make ffmpeg read a local path it names, so
// such content is refused before ffmpeg sees it; HLS by URL is handled by
// downloading and rewriting the playlist instead (hls.go).
var referencingFormats = [][]byte{
	[]byte("#EXTM3U"), []byte("ffconcat"), []byte("<?xml"), []byte("<MPD"), []byte("<smil"),
}

// sniffReferencing reports whether the file starts like a referencing text
// format (after an optional BOM and whitespace).
func sniffReferencing(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, err
	}
	h := bytes.TrimLeft(bytes.TrimPrefix(head[:n], []byte("\xEF\xBB\xBF")), " \t\r\n")
	for _, p := range referencingFormats {
		if len(h) >= len(p) && strings.EqualFold(string(h[:len(p)]), string(p)) {
			return true, nil
		}
	}
	return false, nil
}
