package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// probeResult is what the pipeline needs to know about an input file.
type probeResult struct {
	FormatName string
	// Demuxer is the allowed demuxer ffprobe read the file with (the first
	// of the names in FormatName); later runs force it.
	Demuxer    string
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

// errNotContainer is a file ffprobe read with a demuxer that is not one of
// containerDemuxers.
var errNotContainer = errors.New("not an allowed container format")

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
	if dur > maxProbeSeconds {
		// A stream's duration is any int64 in any time base; in
		// milliseconds it could wrap negative and slip under MaxDuration.
		return r, fmt.Errorf("the duration %g s is out of range", dur)
	}
	// ffprobe already refused every other demuxer (-format_whitelist); a
	// format outside the list here means that refusal did not happen.
	if r.Demuxer = containerDemuxer(r.FormatName); r.Demuxer == "" {
		return r, fmt.Errorf("%w: %q", errNotContainer, r.FormatName)
	}
	r.DurationMs = int64(math.Round(dur * 1000))
	return r, nil
}

// maxProbeSeconds bounds a duration ffprobe reports (about 31 years), far
// above any MaxDuration and far below an overflow in milliseconds.
const maxProbeSeconds = 1e9

// parseSeconds parses ffprobe's decimal seconds; -1 for "N/A" or garbage.
func parseSeconds(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return -1
	}
	return v
}

// containerDemuxers are the only demuxers ffmpeg and ffprobe may open a
// staged file with (no format that opens another file), by ffmpeg's name for each (the first of the
// comma-separated names it reports as format_name). Each is a container or
// a stream format of video or audio that reads nothing but the file it is
// given: no playlist or manifest (hls, dash, webm_dash_manifest), no concat
// script (concat), no session description (sdp, rtp, rtsp), no image
// sequence or single image (image2, image2pipe, *_pipe), no device or
// filter graph (lavfi), no subtitle sidecar (vobsub) — nothing that opens
// another file or URL whatever its bytes say. mov's external data
// references (enable_drefs) are off by default, as we leave them.
//
// ffmpeg checks the list (-format_whitelist) after probing: a file whose
// bytes look most like a format outside it is refused, not read with the
// next-best demuxer. The list also binds every nested open, so it is the
// defense whatever the first bytes are; the sniffing of sniffReferencing is
// only there to give playlists a clearer message.
var containerDemuxers = []string{
	"mov",      // mov,mp4,m4a,3gp,3g2,mj2
	"matroska", // matroska,webm
	"avi", "flv", "asf",
	"mpegts", // MPEG transport stream (.ts, .m2ts)
	"mpeg",   // MPEG program stream (.mpg, .vob)
	"ogg",
	"wav", "w64", "aiff", "caf",
	"mp3", "aac", "ac3", "eac3", "flac", "amr",
}

// containerWhitelist is containerDemuxers as ffmpeg's -format_whitelist.
var containerWhitelist = strings.Join(containerDemuxers, ",")

// hlsRemuxWhitelist is the list for the one run that reads an HLS playlist:
// the playlist we wrote ourselves (hls.go) and its segments. The hls
// demuxer opens each segment with the same list and forbids segments from
// opening anything in turn.
var hlsRemuxWhitelist = "hls," + containerWhitelist

// containerDemuxer returns the demuxer to force for a file ffprobe reported
// as formatName, or "" when that format is not an allowed container.
func containerDemuxer(formatName string) string {
	name, _, _ := strings.Cut(formatName, ",")
	for _, d := range containerDemuxers {
		if name == d {
			return d
		}
	}
	return ""
}

// inputArgs are the ffmpeg/ffprobe options that open a staged file: the file
// protocol only, the container demuxers only (for nested opens too), the
// demuxer forced when the probe has named it, and the path as a file: URL so
// that no part of it is read as a protocol or option.
func inputArgs(path, demuxer string) []string {
	args := []string{"-protocol_whitelist", "file", "-format_whitelist", containerWhitelist}
	if demuxer != "" {
		args = append(args, "-f", demuxer)
	}
	return append(args, "-i", "file:"+path)
}

// probe runs ffprobe on a staged file.
func (a *Analyzer) probe(ctx context.Context, path string) (probeResult, error) {
	var out bytes.Buffer
	args := []string{"-hide_banner", "-v", "error", "-print_format", "json",
		"-show_entries", "format=format_name,duration:stream=codec_type,codec_name,width,height,duration:stream_disposition=attached_pic"}
	err := a.run.run(ctx, command{
		path:      a.tools.FFprobe,
		args:      append(args, inputArgs(path, "")...),
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
// URLs named inside them (playlists, concat scripts, DASH manifests). They
// are refused before ffmpeg sees them, with a message that says why; the
// refusal that holds whatever the bytes are is containerDemuxers.
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
	return referencingHead(head[:n]), nil
}

// referencingHead reports whether the first bytes of a file start like a
// referencing text format, after an optional BOM and whitespace.
func referencingHead(head []byte) bool {
	h := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF")), " \t\r\n")
	for _, p := range referencingFormats {
		if len(h) >= len(p) && strings.EqualFold(string(h[:len(p)]), string(p)) {
			return true
		}
	}
	return false
}
