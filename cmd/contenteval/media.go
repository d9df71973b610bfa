package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/media"
	"github.com/contenteval/contenteval/precheck"
	"github.com/contenteval/contenteval/safehttp"
)

// Timed media (docs/api.md#timed-media) is wired from here: the settings, the analyzer with
// its start-up statement of which tools exist, and the frame precheck. The
// job service takes them as JobConfig.Media and JobConfig.MediaPrecheck
// (see domain/media_jobs.go).

// mediaSettings are the timed-media limits (docs/api.md#timed-media), from the
// environment like every setting; unset means the default.
var mediaSettings = []struct {
	env, def, help string
	set            func(c *media.Config, v string) error
}{
	{"CONTENTEVAL_MEDIA_MAX_BYTES", "2147483648", "largest video or audio, inline or fetched, in bytes", func(c *media.Config, v string) error { return parseInt(&c.MaxBytes, v) }},
	{"CONTENTEVAL_MEDIA_MAX_DURATION", "4h", "longest video or audio", func(c *media.Config, v string) error { return parseDuration(&c.MaxDuration, v) }},
	{"CONTENTEVAL_MEDIA_SCENE_CEILING", "500", "most scenes a video may have (then JOB_ERROR_REASON_VIDEO_SCENE_CEILING_EXCEEDED)", func(c *media.Config, v string) error { return parseIntInt(&c.SceneCeiling, v) }},
	{"CONTENTEVAL_MEDIA_SCENE_THRESHOLD", "0.35", "ffmpeg scene score (0..1) that starts a new scene", func(c *media.Config, v string) error { return parseFloat(&c.SceneThreshold, v) }},
	{"CONTENTEVAL_MEDIA_REMUX_TIMEOUT", "5m", "longest an HLS stream may take to fetch and remux (then JOB_ERROR_REASON_HLS_REMUX_TIMEOUT_EXHAUSTED)", func(c *media.Config, v string) error { return parseDuration(&c.RemuxTimeout, v) }},
	{"CONTENTEVAL_MEDIA_TEMP_DIR", "", "where media is staged while it is analysed (default: the system temporary directory)", func(c *media.Config, v string) error { c.TempDir = v; return nil }},
}

// mediaConfig reads the timed-media settings and validates them.
func mediaConfig(getenv func(string) string) (media.Config, error) {
	c := media.DefaultConfig()
	for _, s := range mediaSettings {
		v := s.def
		if e := getenv(s.env); e != "" {
			v = e
		}
		if err := s.set(&c, v); err != nil {
			return c, fmt.Errorf("$%s: %w", s.env, err)
		}
	}
	switch {
	case c.MaxBytes <= 0:
		return c, fmt.Errorf("$CONTENTEVAL_MEDIA_MAX_BYTES must be positive")
	case c.MaxDuration <= 0:
		return c, fmt.Errorf("$CONTENTEVAL_MEDIA_MAX_DURATION must be positive")
	case c.SceneCeiling <= 0:
		return c, fmt.Errorf("$CONTENTEVAL_MEDIA_SCENE_CEILING must be positive")
	case c.SceneThreshold <= 0 || c.SceneThreshold >= 1:
		return c, fmt.Errorf("$CONTENTEVAL_MEDIA_SCENE_THRESHOLD must be between 0 and 1, exclusive")
	case c.RemuxTimeout <= 0:
		return c, fmt.Errorf("$CONTENTEVAL_MEDIA_REMUX_TIMEOUT must be positive")
	}
	return c, nil
}

// newMediaAnalyzer returns the analyzer and says at start what the server
// can do with timed media: an operator without ffmpeg sees a warning naming
// what to install before any job fails for it.
func newMediaAnalyzer(cfg media.Config, allowPrivate bool, now time.Time, log *slog.Logger) *media.Analyzer {
	tools := media.FindTools()
	level := slog.LevelInfo
	if !tools.ASRReady() {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "timed media: "+tools.Status())
	// Staging left by a process killed mid-analysis; a day is far past the
	// job execution deadline, so no live analysis of another process is hit.
	if n, err := media.RemoveStaleStaging(cfg.TempDir, 24*time.Hour, now); err == nil && n > 0 {
		log.Info("timed media: removed stale staging directories", "count", n)
	}
	// Media URLs get their own client: the image client's 20 MiB and 30 s
	// would refuse most videos.
	fetch := safehttp.New(safehttp.Config{AllowPrivate: allowPrivate, MaxBytes: cfg.MaxBytes, Timeout: 10 * time.Minute})
	return media.New(cfg, tools, fetch)
}

// framePrecheck runs the image precheck (hash lists) on the frames of one
// video, with the account and job for the audit record; a match is the
// precheck's *Blocked, which fails the job with CONTENT_BLOCKED. The
// frames share a tally: a hash several frames match counts once, and the
// SHADOW matches go to the video's report.
type framePrecheck struct {
	svc              *precheck.Service
	accountID, jobID string
	tally            precheck.Tally
}

func (p *framePrecheck) PrecheckFrame(ctx context.Context, f domain.VideoFrame) error {
	seg := f.Segment
	img, err := p.svc.CheckAt(ctx, p.accountID, p.jobID, f.Encoded, &seg, &p.tally)
	img.Release()
	return err
}

// PrecheckMatches returns the video's SHADOW matches.
func (p *framePrecheck) PrecheckMatches() []rules.PrecheckMatch { return p.tally.PrecheckMatches() }

// framePrecheckFor adapts the precheck service to the job worker.
func framePrecheckFor(svc *precheck.Service) domain.FramePrecheckFor {
	if svc == nil {
		return nil
	}
	return func(accountID, jobID string) domain.FramePrecheck {
		return &framePrecheck{svc: svc, accountID: accountID, jobID: jobID}
	}
}
