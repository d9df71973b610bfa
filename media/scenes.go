package media

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/domain/rules"
)

// errSceneCeiling stops scene detection as soon as the ceiling is passed,
// so a pathological video (a strobe) does not cost a full decode first.
var errSceneCeiling = errors.New("scene ceiling exceeded")

// parseShowinfoPTS returns the pts_time of a showinfo frame line, in ms.
func parseShowinfoPTS(line string) (int64, bool) {
	if !strings.Contains(line, "Parsed_showinfo") || !strings.Contains(line, " n:") {
		return 0, false
	}
	i := strings.Index(line, "pts_time:")
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(line[i+len("pts_time:"):])
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return int64(math.Round(v * 1000)), true
}

// sampledFrame is a frame the scene pass selected: the first frame of the
// video or of a new scene, as PNG, with its time on the timeline.
type sampledFrame struct {
	atMs int64
	png  []byte
}

// scanScenes decodes the first video stream once: ffmpeg's scene detection
// selects the first frame and every frame whose scene score exceeds the
// threshold, logs its time (showinfo, on stderr) and writes it as PNG to a
// pipe (stdout). Each selected frame starts a segment and is its
// representative — the first picture of the new scene — so no second decode
// or seek is needed (seeking to mid-segment frames cost as much CPU as the
// scene pass itself on long-GOP video). Segments reach onSegment in timeline
// order as soon as their end is known (the next cut, or durationMs for the
// last), so at most two frames are in memory at any time.
//
// The scene ceiling is enforced as frames are selected: the pass stops as
// soon as it is passed, without decoding the rest. The file is read with
// demuxer ("" = probed among the allowed ones, see inputArgs).
func (a *Analyzer) scanScenes(ctx context.Context, path, demuxer string, durationMs int64, onSegment func(domain.FrameSegment, sampledFrame) error) error {
	// showinfo logs a frame before it is encoded, so its time is sent
	// before its PNG arrives; the buffer lets the stderr reader run ahead.
	times := make(chan int64, a.cfg.SceneCeiling+1)
	// stop is closed when the pass is abandoned (the ceiling), so a PNG
	// whose time will never come does not block the reader.
	stop := make(chan struct{})
	selected := 0
	var cur *sampledFrame // the frame of the open segment
	var curStart int64
	handle := func(png []byte) error {
		var at int64
		select {
		case at = <-times:
		case <-stop:
			return errSceneCeiling
		case <-ctx.Done():
			return ctx.Err()
		}
		f := sampledFrame{atMs: at, png: png}
		if cur == nil {
			// The first frame represents [0, next cut) even when the picture
			// starts a little after 0 (a timeline that starts with the audio).
			cur, curStart = &f, 0
			return nil
		}
		if at <= curStart || at >= durationMs {
			return nil // not a usable cut: the open segment keeps its frame
		}
		if err := onSegment(domain.FrameSegment{StartMs: curStart, EndMs: at}, *cur); err != nil {
			return err
		}
		cur, curStart = &f, at
		return nil
	}
	filter := fmt.Sprintf("select='eq(n,0)+gt(scene,%s)',showinfo", strconv.FormatFloat(a.cfg.SceneThreshold, 'f', -1, 64))
	args := append([]string{"-nostdin", "-hide_banner", "-nostats", "-loglevel", "info"}, inputArgs(path, demuxer)...)
	err := a.run.run(ctx, command{
		path: a.tools.FFmpeg,
		args: append(args, "-map", "0:v:0", "-an", "-sn", "-dn", "-vf", filter, "-fps_mode", "passthrough",
			"-f", "image2pipe", "-c:v", "png", "pipe:1"),
		timeout: a.cfg.SceneTimeout,
		stdout:  &pngSplitter{max: maxFrameBytes, onPNG: handle},
		stderrLine: func(line string) error {
			if ms, ok := parseShowinfoPTS(line); ok {
				if selected++; selected > a.cfg.SceneCeiling {
					close(stop)
					return errSceneCeiling
				}
				times <- ms
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	if cur == nil {
		return errors.New("the video has no frame")
	}
	return onSegment(domain.FrameSegment{StartMs: curStart, EndMs: max(durationMs, curStart)}, *cur)
}

// maxFrameBytes bounds one extracted frame (an 8K PNG is ~50 MiB at worst).
const maxFrameBytes = 64 << 20

// pngSplitter cuts a stream of concatenated PNG files (ffmpeg's image2pipe)
// into files, by walking the chunk structure to each IEND, and hands each to
// onPNG. It holds at most one incomplete file; one larger than max is an
// error.
type pngSplitter struct {
	max   int
	onPNG func([]byte) error
	buf   []byte
	off   int // where the next unparsed chunk starts in buf; 0: at a file start
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

func (p *pngSplitter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		if p.off == 0 {
			if len(p.buf) < len(pngSignature) {
				return len(b), nil
			}
			if !bytes.Equal(p.buf[:len(pngSignature)], pngSignature) {
				return 0, errors.New("ffmpeg wrote something that is not a PNG")
			}
			p.off = len(pngSignature)
		}
		if len(p.buf)-p.off < 8 {
			return len(b), nil
		}
		n := int64(binary.BigEndian.Uint32(p.buf[p.off:]))
		end := int64(p.off) + 12 + n
		if end > int64(p.max) {
			return 0, errOutputTooLarge
		}
		if int64(len(p.buf)) < end {
			return len(b), nil
		}
		isEnd := string(p.buf[p.off+4:p.off+8]) == "IEND"
		p.off = int(end)
		if !isEnd {
			continue
		}
		png := append([]byte(nil), p.buf[:end]...)
		p.buf = append(p.buf[:0], p.buf[end:]...)
		p.off = 0
		if err := p.onPNG(png); err != nil {
			return 0, err
		}
	}
}

// frameFeatures decodes a PNG frame and computes what HASH signals compare:
// the PDQ hash and quality, and md5/sha1 of the PNG bytes (which only ever
// equal a list entry made from the same extraction, but give md5/sha1
// signals an answer instead of -1). The decoded frame counts against the
// process's decode budget, as images do, until it is hashed; the wait for
// room ends with ctx.
func frameFeatures(ctx context.Context, budget *imaging.Budget, png []byte, lim imaging.Limits) (rules.ImageFeatures, error) {
	img, _, release, err := budget.Decode(ctx, png, lim)
	if err != nil {
		return rules.ImageFeatures{}, err
	}
	h, q := imaging.PDQ(img)
	release() // img is not used past here, so a collection can free it

	d := imaging.Digest(png)
	return rules.ImageFeatures{PDQ: h, PDQQuality: q, HasPDQ: !h.IsZero(), MD5: d.MD5, SHA1: d.SHA1}, nil
}
