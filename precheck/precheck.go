// Package precheck stops known abusive images before any evaluation
// (docs/operations.md#image-precheck-hash-lists): operator hash lists (md5, sha1, PDQ) are matched against every
// image and video frame; a match blocks the content, is written to an audit
// table (never the content itself), and undecodable or unsupported images are
// rejected with their failure type.
package precheck

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the precheck settings.
type Config struct {
	Bands  imaging.Bands
	Limits imaging.Limits
	// MinPDQQuality: images whose PDQ quality is lower are matched only by
	// md5/sha1 (a near-flat image's PDQ is noise that can land near anything).
	MinPDQQuality int
	// DecodeBudget is shared by every decode of the process (docs/api.md#limits);
	// nil bounds nothing.
	DecodeBudget *imaging.Budget
	// Registerer receives the per-list metrics; nil keeps them private.
	Registerer prometheus.Registerer
}

// Service runs prechecks and manages the lists.
type Service struct {
	store   domain.HashListStore
	snap    atomic.Pointer[snapshot]
	metrics *metrics
	cfg     Config
	clock   domain.Clock
	newID   func() string
	log     *slog.Logger

	mu         sync.Mutex
	generation int64
	loaded     bool
}

// NewService returns a Service; call Reload (or Watch) to load the lists.
func NewService(store domain.HashListStore, cfg Config, clock domain.Clock, newID func() string, log *slog.Logger) (*Service, error) {
	if cfg.Bands == (imaging.Bands{}) {
		cfg.Bands = imaging.DefaultBands()
	}
	if err := cfg.Bands.Validate(); err != nil {
		return nil, err
	}
	if cfg.MinPDQQuality == 0 {
		cfg.MinPDQQuality = imaging.RecommendedMinPDQQuality
	}
	return &Service{store: store, metrics: newMetrics(cfg.Registerer), cfg: cfg, clock: clock, newID: newID, log: log}, nil
}

// DecodeBudget returns the budget the service decodes within, for the other
// decoders of the process (video frames) to share.
func (s *Service) DecodeBudget() *imaging.Budget { return s.cfg.DecodeBudget }

var listName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Import reads a hash-list file (one hex hash per line; PDQ lines may carry
// a quality) into the list name, replacing it when it exists. Codes:
// INVALID_ARGUMENT naming the bad line.
func (s *Service) Import(ctx context.Context, name string, kind imaging.Kind, r io.Reader) (*domain.HashList, error) {
	if !listName.MatchString(name) {
		return nil, domain.InvalidField("name", "use 1-128 letters, digits, '.', '_' or '-'")
	}
	l := &domain.HashList{ID: s.newID(), Name: name, Kind: kind, Created: s.clock.Now()}
	err := s.store.ImportHashList(ctx, l, func(yield func(domain.HashListEntry) error) error {
		err := imaging.ParseHashList(r, kind, func(e imaging.HashEntry) error {
			l.Count++
			return yield(domain.HashListEntry{Hex: e.Hex, Quality: e.Quality})
		})
		if pe, ok := err.(*imaging.ParseError); ok {
			return domain.InvalidField("file", pe.Error())
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// List returns the lists.
func (s *Service) List(ctx context.Context) ([]*domain.HashList, error) {
	return s.store.ListHashLists(ctx)
}

// Delete removes a list. Codes: NOT_FOUND.
func (s *Service) Delete(ctx context.Context, name string) error {
	return s.store.DeleteHashList(ctx, name)
}

// Reload rebuilds the in-memory matcher when the lists changed since the last
// load (or always, the first time).
func (s *Service) Reload(ctx context.Context) error {
	gen, err := s.store.HashListsGeneration(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded && gen == s.generation {
		return nil
	}
	// Built aside while checks go on with the old snapshot, then swapped.
	snap, n, err := s.build(ctx)
	if err != nil {
		return err
	}
	s.snap.Store(snap)
	s.generation, s.loaded = gen, true
	if s.log != nil {
		s.log.Info("hash lists loaded", "lists", len(snap.lists), "hashes", n, "generation", gen)
	}
	return nil
}

// Watch reloads the lists every interval until ctx is done, so an import
// with the CLI applies without a restart.
func (s *Service) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Reload(ctx); err != nil && ctx.Err() == nil && s.log != nil {
			s.log.Warn("reloading hash lists", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Image is a checked, decoded image ready for evaluation. Its pixels count
// against the decode budget until Release.
type Image struct {
	Decoded     image.Image
	Format      imaging.Format
	Digests     imaging.Digests
	PDQ         imaging.Hash
	PDQQuality  int
	ContentHash string
	// PrecheckMatches are the SHADOW matches that let it through (Check
	// only; CheckAt leaves them in its tally).
	PrecheckMatches []rules.PrecheckMatch

	release func()
}

// Release gives the image's share of the decode budget back; Decoded must
// not be used after it. It may be called more than once. Decoded is cleared
// first: the budget counts the pixels until a collection frees them, which
// it cannot while the Image still points at them.
func (img *Image) Release() {
	if img != nil && img.release != nil {
		img.Decoded = nil
		img.release()
	}
}

// Blocked is the error of content the precheck refused; Failure is the
// detail of the 499 body, Reason the JobErrorReason of an async job.
type Blocked struct {
	Failure domain.PrecheckFailure
	// Match is set for hash-list matches; nil for images the check could not
	// read (invalid or unsupported), for which it could not be completed.
	Match *imaging.Result
}

func (b *Blocked) Error() string { return b.Failure.Message }

// JobMessage is the message of the job error: the fixed one, with the time
// range of the frame (of a video or an animation) that matched.
func (b *Blocked) JobMessage() string {
	msg := domain.ErrJobContentBlocked.Message
	if b.Match == nil {
		msg = domain.ErrJobPrecheckFailed.Message
	}
	if at := b.Failure.At; at != nil {
		msg += fmt.Sprintf(" A frame shown from %s to %s matched a hash list.", timecode(at.StartMs), timecode(at.EndMs))
	}
	return msg
}

// timecode formats ms as HH:MM:SS.mmm.
func timecode(ms int64) string {
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, ms%1000)
}

// Reason is the JobErrorReason an asynchronous job fails with.
func (b *Blocked) Reason() string {
	if b.Match != nil {
		return "JOB_ERROR_REASON_CONTENT_BLOCKED"
	}
	return "JOB_ERROR_REASON_CONTENT_PRECHECK_FAILED"
}

// Check decodes and hashes data and matches it against the lists. A match is
// audited (account, job, list, confidence) and returned as *Blocked, as is
// an image that cannot be decoded; other errors mean the check could not
// run, ctx.Err() among them when ctx ends while the decode waits for the
// decode budget. The caller must Release the returned image once done with
// its pixels. accountID and jobID are for the audit record.
func (s *Service) Check(ctx context.Context, accountID, jobID string, data []byte) (*Image, error) {
	tally := &Tally{}
	img, err := s.CheckAt(ctx, accountID, jobID, data, nil, tally)
	if img != nil {
		img.PrecheckMatches = tally.PrecheckMatches()
	}
	return img, err
}

// CheckAt is Check for a video frame of the segment at: a rejection and a
// shadow match carry its time range. An animated GIF (at nil) is checked
// frame by frame as well (checkAnimation). The matches of every image of
// one content (a video's frames) go to one tally.
func (s *Service) CheckAt(ctx context.Context, accountID, jobID string, data []byte, at *domain.FrameSegment, tally *Tally) (*Image, error) {
	d := imaging.Digest(data)
	contentHash := d.ContentHash()
	img, format, release, err := s.cfg.DecodeBudget.Decode(ctx, data, s.cfg.Limits)
	if err != nil {
		return nil, unreadable(err, contentHash)
	}
	pdq, quality := imaging.PDQ(img)
	if err := s.match(ctx, accountID, jobID, d, pdq, quality, contentHash, at, tally); err != nil {
		release()
		return nil, err
	}
	if at == nil && format == imaging.FormatGIF {
		if err := s.checkAnimation(ctx, accountID, jobID, data, contentHash, tally); err != nil {
			release()
			return nil, err
		}
	}
	return &Image{Decoded: img, Format: format, Digests: d, PDQ: pdq, PDQQuality: quality, ContentHash: contentHash,
		release: release}, nil
}

// MaxAnimationFramesChecked is how many frames of an animated GIF, besides
// its first, are hashed and matched: sampled evenly over its running time,
// as a video's frames are, so that a long animation costs as much as a
// short one and a frame shown for a moment is not what decides.
const MaxAnimationFramesChecked = 32

// checkAnimation matches the frames of an animated GIF against the lists,
// as a video's: a rejection and a shadow match carry the frame's time
// range. The frames have no bytes of their own, so only PDQ lists match
// them. A list's hash that matched an earlier frame (or the first) is not
// counted again: one content is one match, however many frames show it.
func (s *Service) checkAnimation(ctx context.Context, accountID, jobID string, data []byte, contentHash string, tally *Tally) error {
	err := s.cfg.DecodeBudget.AnimationFrames(ctx, data, s.cfg.Limits, MaxAnimationFramesChecked, func(f imaging.AnimationFrame) error {
		pdq, quality := imaging.PDQ(f.Image)
		return s.match(ctx, accountID, jobID, imaging.Digests{}, pdq, quality, contentHash, &domain.FrameSegment{StartMs: f.StartMs, EndMs: f.EndMs}, tally)
	})
	var ie *imaging.Error
	if errors.As(err, &ie) {
		return unreadable(err, contentHash)
	}
	return err
}

// unreadable is the *Blocked of an image the decoder refused (a
// PrecheckFailure of its type), or err itself when the check could not run.
func unreadable(err error, contentHash string) error {
	ft, ok := imaging.FailureType(err)
	if !ok {
		return err
	}
	msg := "the image is invalid or corrupted"
	var ie *imaging.Error
	switch {
	case ft == domain.PrecheckFailureUnsupportedImageFormat:
		msg = "the image format is not supported; send JPEG, PNG, GIF, WebP, BMP or TIFF"
	case errors.As(err, &ie) && ie.TooLarge:
		msg = "the image is too large: " + ie.Message
	}
	return &Blocked{Failure: domain.PrecheckFailure{Type: ft, Message: msg, ContentHash: contentHash,
		MatchConfidence: domain.MatchConfidenceUnspecified}}
}

// Tally is what the checks of one content's images (a video's frames, an
// animation's) have matched so far: a list's hash is recorded once per
// content, and its SHADOW matches go to the report. A nil *Tally keeps
// nothing; a Tally is safe for concurrent use.
type Tally struct {
	mu     sync.Mutex
	seen   map[[2]string]bool // list id, hash
	shadow []rules.PrecheckMatch
}

// PrecheckMatches returns the SHADOW matches so far, in the order they
// were first made.
func (t *Tally) PrecheckMatches() []rules.PrecheckMatch {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.shadow)
}

// first reports whether the content has not matched list's hash before,
// and marks it matched when mark is set.
func (t *Tally) first(list, hash string, mark bool) bool {
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := [2]string{list, hash}
	if t.seen[key] {
		return false
	}
	if mark {
		if t.seen == nil {
			t.seen = map[[2]string]bool{}
		}
		t.seen[key] = true
	}
	return true
}

func (t *Tally) addShadow(m rules.PrecheckMatch) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shadow = append(t.shadow, m)
}

// match looks the hashes up and decides: a rejection is audited and
// returned as *Blocked; shadow matches are recorded by decide and kept in
// tally.
func (s *Service) match(ctx context.Context, accountID, jobID string, d imaging.Digests, pdq imaging.Hash, quality int, contentHash string, at *domain.FrameSegment, tally *Tally) error {
	hits := s.snap.Load().lookup(accountID, d, pdq, quality >= s.cfg.MinPDQQuality)
	if len(hits) == 0 {
		return nil
	}
	dec, err := s.decide(ctx, hits, contentHash, at, tally)
	if err != nil {
		return err
	}
	h := dec.reject
	if h == nil {
		return nil
	}
	l := h.list.list
	m := &domain.PrecheckMatch{ID: s.newID(), AccountID: accountID, JobID: jobID, List: l.Name, Kind: h.kind,
		Confidence: h.confidence, Distance: h.distance, Created: s.clock.Now()}
	if err := s.store.RecordMatch(ctx, m); err != nil {
		// Blocking must not depend on the audit write; the log keeps it.
		if s.log != nil {
			s.log.Error("recording precheck match", "account", accountID, "job", jobID, "list", l.ID, "error", err.Error())
		}
	}
	return &Blocked{Match: &imaging.Result{Matched: true, Confidence: h.confidence, Kind: h.kind, List: l.Name, Distance: h.distance},
		Failure: domain.PrecheckFailure{
			Type: domain.PrecheckFailureNCMEC, Message: "the content matched a known-abuse hash list",
			ContentHash: contentHash, MatchConfidence: h.confidence,
			ListID: l.ID, ListName: l.Name, Source: h.source, Note: h.note, MatchedHash: h.hash, Distance: h.distance,
			At: at,
		}}
}
