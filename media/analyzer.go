package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/safehttp"
)

// Config bounds the pipeline (docs/api.md#timed-media). Zero fields take the defaults
// of DefaultConfig.
type Config struct {
	MaxBytes    int64         // input size, 2 GiB
	MaxDuration time.Duration // input duration, 4 h
	// SceneThreshold is the ffmpeg scene score (0..1) above which a frame
	// starts a new segment; 0.35 cuts at hard cuts and not at motion.
	SceneThreshold float64
	SceneCeiling   int // the most segments a video may have, 500
	// RemuxTimeout bounds fetching and remuxing an HLS stream as a whole.
	RemuxTimeout time.Duration
	ProbeTimeout time.Duration // one ffprobe run
	// SceneTimeout bounds the scene pass over the whole video (the one
	// decode, which also yields the frames).
	SceneTimeout time.Duration
	ASRTimeout   time.Duration // speech recognition over the whole audio
	// Frames bounds the decoding of extracted frames.
	Frames imaging.Limits
	// DecodeBudget is the process's budget of decoded pixels, which the
	// extracted frames share with images; nil bounds nothing.
	DecodeBudget *imaging.Budget
	// Process applies to every subprocess.
	Process ProcessLimits
	// TempDir is where inputs are staged ("" = os.TempDir()).
	TempDir string
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		MaxBytes:       2 << 30,
		MaxDuration:    4 * time.Hour,
		SceneThreshold: 0.35,
		SceneCeiling:   500,
		RemuxTimeout:   5 * time.Minute,
		ProbeTimeout:   30 * time.Second,
		SceneTimeout:   30 * time.Minute,
		ASRTimeout:     2 * time.Hour,
		Frames:         imaging.Limits{MaxBytes: maxFrameBytes, MaxPixels: imaging.DefaultMaxPixels},
		Process: ProcessLimits{
			Nice:         10,
			CPUSeconds:   4 * 3600,
			AddressSpace: 8 << 30,
			FileSize:     4 << 30,
		},
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = d.MaxBytes
	}
	set(&c.MaxDuration, d.MaxDuration)
	if c.SceneThreshold <= 0 || c.SceneThreshold >= 1 {
		c.SceneThreshold = d.SceneThreshold
	}
	if c.SceneCeiling <= 0 {
		c.SceneCeiling = d.SceneCeiling
	}
	set(&c.RemuxTimeout, d.RemuxTimeout)
	set(&c.ProbeTimeout, d.ProbeTimeout)
	set(&c.SceneTimeout, d.SceneTimeout)
	set(&c.ASRTimeout, d.ASRTimeout)
	if c.Frames.MaxBytes <= 0 {
		c.Frames.MaxBytes = d.Frames.MaxBytes
	}
	if c.Frames.MaxPixels <= 0 {
		c.Frames.MaxPixels = d.Frames.MaxPixels
	}
	if c.Process == (ProcessLimits{}) {
		c.Process = d.Process
	}
	return c
}

// Analyzer runs the timed-media pipeline; it implements
// domain.MediaAnalyzer. Safe for concurrent use.
type Analyzer struct {
	cfg     Config
	tools   Tools
	fetcher Fetcher
	run     *runner
	// notePeakHits, when set, is told the most timed hits an analysis
	// held at once (for tests of the bound).
	notePeakHits func(int)
}

var _ domain.MediaAnalyzer = (*Analyzer)(nil)

// New returns an Analyzer using tools (see FindTools) and fetcher for URLs.
func New(cfg Config, tools Tools, fetcher Fetcher) *Analyzer {
	cfg = cfg.withDefaults()
	return &Analyzer{
		cfg: cfg, tools: tools, fetcher: fetcher,
		run: &runner{limits: cfg.Process, prlimit: tools.Prlimit, nice: tools.Nice},
	}
}

// Tools returns the tools the analyzer uses, for start-up logging.
func (a *Analyzer) Tools() Tools { return a.tools }

// The fixed client-facing messages of each failure (the contract: a fixed
// explanation per reason; the cause goes to the log through MediaError.Err).
const (
	msgUndecodable   = "The submitted media could not be validated or decoded."
	msgNoVideo       = "The submitted video has no video stream."
	msgNoAudio       = "The submitted audio has no audio stream."
	msgTooLarge      = "The submitted media is larger than the size limit."
	msgTooLong       = "The submitted media is longer than the duration limit."
	msgReferencing   = "Playlists, manifests and concat scripts are not accepted as media (HLS playlists are, by URL)."
	msgSceneCeiling  = "The video has more analysable scenes than the maximum."
	msgRemuxTimeout  = "The video stream could not be retrieved before the remux timeout."
	msgHLSInvalid    = "The video stream's playlist could not be processed."
	msgUnreachable   = "The media URL could not be accessed."
	msgCaptions      = "The captions are not valid WebVTT."
	msgTranscript    = "The audio transcript could not be processed."
	msgNoTranscriber = "Audio without captions needs speech recognition, which is not installed on this server (pocketsphinx)."
)

// AnalyzeMedia implements domain.MediaAnalyzer: stage the input in a
// temporary directory (always removed), probe it, segment and sample the
// video, build the transcript, evaluate every frame and chunk through eval,
// and build the hits.
func (a *Analyzer) AnalyzeMedia(ctx context.Context, in domain.MediaInput, pre domain.FramePrecheck, eval domain.MediaEvalFunc) (*domain.MediaAnalysis, error) {
	if missing := a.tools.MissingForMedia(); len(missing) > 0 {
		return nil, domain.MediaUnavailableError(missing)
	}
	if in.Kind != domain.MediaVideo && in.Kind != domain.MediaAudio {
		return nil, fmt.Errorf("media: unknown kind %q", in.Kind)
	}
	// Captions are checked before any download: a bad file fails fast.
	chunks, source, err := a.captions(in)
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp(a.cfg.TempDir, stagingPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("media: staging directory: %w", err)
	}
	defer os.RemoveAll(dir)

	input, contentHash, err := a.stage(ctx, in, dir)
	if err != nil {
		return nil, err
	}
	pr, err := a.probe(ctx, input)
	if err != nil {
		return nil, a.failure(ctx, err, domain.ReasonVideoValidationFailure, msgUndecodable)
	}
	if pr.DurationMs > a.cfg.MaxDuration.Milliseconds() {
		return nil, domain.NewMediaError(domain.ReasonVideoValidationFailure, msgTooLong, nil)
	}
	if in.Kind == domain.MediaVideo && !pr.HasVideo {
		return nil, domain.NewMediaError(domain.ReasonVideoValidationFailure, msgNoVideo, nil)
	}
	if in.Kind == domain.MediaAudio && !pr.HasAudio {
		return nil, domain.NewMediaError(domain.ReasonVideoValidationFailure, msgNoAudio, nil)
	}

	out := &domain.MediaAnalysis{Kind: in.Kind, ContentHash: contentHash, DurationMs: pr.DurationMs}
	p := &mediaPass{out: out}
	if in.Kind == domain.MediaVideo {
		if err := a.framePass(ctx, input, pr, pre, eval, p); err != nil {
			return nil, err
		}
	}
	if err := a.transcriptPass(ctx, in, input, pr, chunks, source, eval, p); err != nil {
		return nil, err
	}
	var cut bool
	out.Hits, cut = p.hits.Hits()
	out.Report = evaluation.MergeReports(p.reports)
	// The report says what was left out, and by which bounds; its
	// verdicts are whole (the reports were all merged).
	if cut && out.Report != nil {
		out.Report.HitsTruncated = true
	}
	if a.notePeakHits != nil {
		a.notePeakHits(p.hits.Peak())
	}
	return out, nil
}

// failure maps a subprocess error: the caller's context ending is returned
// as is (the job's deadline or shutdown decides its fate), anything else is
// the given media failure with the cause kept for the log.
func (a *Analyzer) failure(ctx context.Context, err error, reason domain.JobErrorReason, msg string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errOutputTooLarge) {
		return domain.NewMediaError(domain.ReasonVideoValidationFailure, msgTooLarge, err)
	}
	return domain.NewMediaError(reason, msg, err)
}

// stage writes the input to a file in dir and returns its path and content
// hash. Inline bytes are written as they are; a URL is fetched through the
// SSRF-safe fetcher; an HLS playlist (by extension, media type or signature)
// is downloaded segment by segment and remuxed into one local file. A staged
// file that starts like a playlist, concat script or manifest is refused
// here with a message that says so; what keeps ffmpeg from following any
// such file, whatever it starts with, is the demuxer allowlist (inputArgs).
func (a *Analyzer) stage(ctx context.Context, in domain.MediaInput, dir string) (string, string, error) {
	path := filepath.Join(dir, "input")
	h := sha256.New()
	if in.URL == "" {
		if int64(len(in.Data)) > a.cfg.MaxBytes {
			return "", "", domain.NewMediaError(domain.ReasonVideoValidationFailure, msgTooLarge, nil)
		}
		if err := writeHashed(path, in.Data, h); err != nil {
			return "", "", err
		}
		if ref, err := sniffReferencing(path); err != nil || ref {
			return "", "", domain.NewMediaError(domain.ReasonVideoValidationFailure, msgReferencing, err)
		}
		return path, hashString(h), nil
	}
	if a.fetcher == nil {
		return "", "", errors.New("media: no fetcher configured for URLs")
	}
	if isHLSURL(in.URL) {
		return a.stageHLS(ctx, in.URL, nil, dir, h)
	}
	resp, err := a.fetcher.Get(ctx, in.URL)
	if err != nil {
		return "", "", a.fetchFailure(ctx, err)
	}
	if isHLSResponse(resp.ContentType, resp.Body) {
		return a.stageHLS(ctx, in.URL, resp, dir, h)
	}
	if int64(len(resp.Body)) > a.cfg.MaxBytes {
		return "", "", domain.NewMediaError(domain.ReasonVideoValidationFailure, msgTooLarge, nil)
	}
	if err := writeHashed(path, resp.Body, h); err != nil {
		return "", "", err
	}
	// A URL may serve a concat script or a DASH manifest as well as an
	// upload can; only HLS (handled above) is followed, by us.
	if ref, err := sniffReferencing(path); err != nil || ref {
		return "", "", domain.NewMediaError(domain.ReasonVideoValidationFailure, msgReferencing, err)
	}
	return path, hashString(h), nil
}

// stageHLS fetches a playlist (unless already fetched), its variant and
// resources, and remuxes them into one Matroska file, all within
// RemuxTimeout; running out of it is HLS_REMUX_TIMEOUT_EXHAUSTED.
func (a *Analyzer) stageHLS(ctx context.Context, raw string, first *safehttp.Response, dir string, h hash.Hash) (string, string, error) {
	hctx, cancel := context.WithTimeout(ctx, a.cfg.RemuxTimeout)
	defer cancel()
	fail := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fe *fetchError
		switch {
		case hctx.Err() != nil:
			return domain.NewMediaError(domain.ReasonHLSRemuxTimeoutExhausted, msgRemuxTimeout, err)
		case errors.As(err, &fe):
			return a.fetchFailure(ctx, fe.err)
		case errors.Is(err, errInputTooLarge):
			return domain.NewMediaError(domain.ReasonVideoValidationFailure, msgTooLarge, err)
		}
		var te *toolTimeoutError
		if errors.As(err, &te) {
			return domain.NewMediaError(domain.ReasonHLSRemuxTimeoutExhausted, msgRemuxTimeout, err)
		}
		return domain.NewMediaError(domain.ReasonVideoValidationFailure, msgHLSInvalid, err)
	}
	resp := first
	if resp == nil {
		var err error
		if resp, err = a.fetcher.Get(hctx, raw); err != nil {
			return "", "", fail(&fetchError{err: err})
		}
	}
	playlist, base := string(resp.Body), resp.FinalURL
	if base == "" {
		base = raw
	}
	variant, err := hlsVariant(playlist)
	if err != nil {
		return "", "", fail(err)
	}
	if variant != "" {
		u, err := parseRef(base, variant)
		if err != nil {
			return "", "", fail(err)
		}
		if resp, err = a.fetcher.Get(hctx, u); err != nil {
			return "", "", fail(&fetchError{err: err})
		}
		playlist, base = string(resp.Body), resp.FinalURL
		if base == "" {
			base = u
		}
		if v, _ := hlsVariant(playlist); v != "" {
			return "", "", fail(errors.New("nested master playlists"))
		}
	}
	local, err := a.localizeHLS(hctx, playlist, base, dir, h, a.cfg.MaxBytes)
	if err != nil {
		return "", "", fail(err)
	}
	pl := filepath.Join(dir, "playlist.m3u8")
	if err := os.WriteFile(pl, []byte(local), 0o600); err != nil {
		return "", "", err
	}
	// The one run that reads a playlist: the one we wrote, as hls (the
	// demuxer's own extension list narrowed to the names we gave), its
	// segments by the container demuxers only, files and AES-128 only.
	out := filepath.Join(dir, "remuxed.mkv")
	err = a.run.run(hctx, command{
		path: a.tools.FFmpeg,
		args: []string{"-nostdin", "-hide_banner", "-nostats", "-loglevel", "error",
			"-protocol_whitelist", "file,crypto", "-format_whitelist", hlsRemuxWhitelist,
			"-f", "hls", "-allowed_extensions", hlsAllowedExtensions, "-i", "file:" + pl,
			"-map", "0:v?", "-map", "0:a?", "-c", "copy", "-f", "matroska", out},
		timeout: a.cfg.RemuxTimeout,
	})
	if err != nil {
		return "", "", fail(err)
	}
	return out, hashString(h), nil
}

func parseRef(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u, err := b.Parse(ref)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// fetchFailure maps an error of the safe fetcher: a source that cannot be
// reached, refuses us (403, 404, any non-2xx), is not allowed by the SSRF
// rules or does not resolve is VIDEO_SOURCE_UNREACHABLE; one that is too
// large is a validation failure.
func (a *Analyzer) fetchFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, safehttp.ErrTooLarge) {
		return domain.NewMediaError(domain.ReasonVideoValidationFailure, msgTooLarge, err)
	}
	return domain.NewMediaError(domain.ReasonVideoSourceUnreachable, msgUnreachable, err)
}

func writeHashed(path string, b []byte, h hash.Hash) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.MultiWriter(f, h).Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func hashString(h hash.Hash) string { return "sha256::" + hex.EncodeToString(h.Sum(nil)) }
