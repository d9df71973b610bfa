package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
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

// SegmentsFromCuts turns scene cut times into frame segments [start, end)
// that cover [0, durationMs) without gaps: the first starts at 0, each cut
// starts a segment, the last ends at the duration. Cuts at or before 0, at or
// after the end, or repeated, start nothing. A video too short to have a
// duration is one empty segment at 0.
func SegmentsFromCuts(cuts []int64, durationMs int64) []domain.FrameSegment {
	cs := append([]int64(nil), cuts...)
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	segs := []domain.FrameSegment{{StartMs: 0}}
	for _, c := range cs {
		last := &segs[len(segs)-1]
		if c <= last.StartMs || c >= durationMs {
			continue
		}
		last.EndMs = c
		segs = append(segs, domain.FrameSegment{StartMs: c})
	}
	segs[len(segs)-1].EndMs = max(durationMs, segs[len(segs)-1].StartMs)
	return segs
}

// detectScenes runs ffmpeg scene detection over the first video stream and
// returns the cut times in ms. Frames are scaled down before the scene score
// is computed: the score compares whole-frame statistics, which survive the
// scaling, and the filter then costs a fraction of full resolution.
func (a *Analyzer) detectScenes(ctx context.Context, path string) ([]int64, error) {
	var cuts []int64
	filter := fmt.Sprintf("scale=-2:'min(%d,ih)',select='gt(scene,%s)',showinfo",
		sceneScaleHeight, strconv.FormatFloat(a.cfg.SceneThreshold, 'f', -1, 64))
	err := a.run.run(ctx, command{
		path: a.tools.FFmpeg,
		args: []string{"-nostdin", "-hide_banner", "-nostats", "-loglevel", "info",
			"-protocol_whitelist", "file", "-i", path,
			"-map", "0:v:0", "-an", "-sn", "-dn", "-vf", filter, "-f", "null", "-"},
		timeout: a.cfg.SceneTimeout,
		stderrLine: func(line string) error {
			if ms, ok := parseShowinfoPTS(line); ok {
				cuts = append(cuts, ms)
				// Cuts+1 segments; stop at once when they pass the ceiling.
				if len(cuts)+1 > a.cfg.SceneCeiling {
					return errSceneCeiling
				}
			}
			return nil
		},
	})
	return cuts, err
}

// sceneScaleHeight is the height frames are scaled to for scene scoring.
const sceneScaleHeight = 180

// maxFrameBytes bounds one extracted frame (an 8K PNG is ~50 MiB at worst).
const maxFrameBytes = 64 << 20

// extractFrame writes the frame at atMs as PNG: input seeking (-ss before -i)
// jumps to the keyframe before atMs and decodes forward, so the cost does not
// grow with the position in a long video. It returns nil bytes when no frame
// exists at or after atMs.
func (a *Analyzer) extractFrame(ctx context.Context, path string, atMs int64) ([]byte, error) {
	var out bytes.Buffer
	err := a.run.run(ctx, command{
		path: a.tools.FFmpeg,
		args: []string{"-nostdin", "-hide_banner", "-nostats", "-loglevel", "error",
			"-protocol_whitelist", "file",
			"-ss", strconv.FormatFloat(float64(atMs)/1000, 'f', 3, 64), "-i", path,
			"-map", "0:v:0", "-an", "-sn", "-dn", "-frames:v", "1",
			"-f", "image2pipe", "-c:v", "png", "pipe:1"},
		timeout:   a.cfg.FrameTimeout,
		stdout:    &out,
		maxStdout: maxFrameBytes,
	})
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// frameFeatures decodes a PNG frame and computes what HASH signals compare:
// the PDQ hash and quality, and md5/sha1 of the PNG bytes (which only ever
// equal a list entry made from the same extraction, but give md5/sha1
// signals an answer instead of -1).
func frameFeatures(png []byte, lim imaging.Limits) (rules.ImageFeatures, error) {
	img, _, err := imaging.Decode(png, lim)
	if err != nil {
		return rules.ImageFeatures{}, err
	}
	h, q := imaging.PDQ(img)
	d := imaging.Digest(png)
	return rules.ImageFeatures{PDQ: h, PDQQuality: q, HasPDQ: !h.IsZero(), MD5: d.MD5, SHA1: d.SHA1}, nil
}
