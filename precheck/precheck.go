// Package precheck stops known abusive images before any evaluation
// (DESIGN §7): operator hash lists (md5, sha1, PDQ) are matched against every
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
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
)

// Config holds the precheck settings.
type Config struct {
	Bands  imaging.Bands
	Limits imaging.Limits
	// MinPDQQuality: images whose PDQ quality is lower are matched only by
	// md5/sha1 (a near-flat image's PDQ is noise that can land near anything).
	MinPDQQuality int
	// DecodeBudget is shared by every decode of the process (DESIGN §15);
	// nil bounds nothing.
	DecodeBudget *imaging.Budget
}

// Service runs prechecks and manages the lists.
type Service struct {
	store   domain.HashListStore
	matcher *imaging.Matcher
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
	return &Service{store: store, matcher: imaging.NewMatcher(nil), cfg: cfg, clock: clock, newID: newID, log: log}, nil
}

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
	var md5s, sha1s []imaging.ExactEntry
	var pdqs []imaging.IndexEntry
	err = s.store.EachHashEntry(ctx, func(list string, kind imaging.Kind, e domain.HashListEntry) error {
		switch kind {
		case imaging.KindMD5:
			md5s = append(md5s, imaging.ExactEntry{Hex: e.Hex, List: list})
		case imaging.KindSHA1:
			sha1s = append(sha1s, imaging.ExactEntry{Hex: e.Hex, List: list})
		case imaging.KindPDQ:
			h, err := imaging.ParseHash(e.Hex)
			if err != nil {
				return fmt.Errorf("hash list %s: %w", list, err)
			}
			pdqs = append(pdqs, imaging.IndexEntry{Hash: h, List: list})
		}
		return nil
	})
	if err != nil {
		return err
	}
	hl, err := imaging.NewHashLists(md5s, sha1s, pdqs)
	if err != nil {
		return err
	}
	s.matcher.Load(hl)
	s.generation, s.loaded = gen, true
	if s.log != nil {
		s.log.Info("hash lists loaded", "md5", len(md5s), "sha1", len(sha1s), "pdq", len(pdqs), "generation", gen)
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

	release func()
}

// Release gives the image's share of the decode budget back; Decoded must
// not be used after it. It may be called more than once.
func (img *Image) Release() {
	if img != nil && img.release != nil {
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
	d := imaging.Digest(data)
	contentHash := d.ContentHash()
	img, format, release, err := s.cfg.DecodeBudget.Decode(ctx, data, s.cfg.Limits)
	if err != nil {
		if ft, ok := imaging.FailureType(err); ok {
			msg := "the image is invalid or corrupted"
			var ie *imaging.Error
			switch {
			case ft == domain.PrecheckFailureUnsupportedImageFormat:
				msg = "the image format is not supported; send JPEG, PNG, GIF, WebP, BMP or TIFF"
			case errors.As(err, &ie) && ie.TooLarge:
				msg = "the image is too large: " + ie.Message
			}
			return nil, &Blocked{Failure: domain.PrecheckFailure{Type: ft, Message: msg, ContentHash: contentHash,
				MatchConfidence: domain.MatchConfidenceUnspecified}}
		}
		return nil, err
	}
	pdq, quality := imaging.PDQ(img)
	res := s.matcher.Check(d.MD5, d.SHA1, pdq, quality >= s.cfg.MinPDQQuality, s.cfg.Bands)
	if res.Matched {
		release()
		m := &domain.PrecheckMatch{ID: s.newID(), AccountID: accountID, JobID: jobID, List: res.List, Kind: res.Kind,
			Confidence: res.Confidence, Distance: res.Distance, Created: s.clock.Now()}
		if err := s.store.RecordMatch(ctx, m); err != nil {
			// Blocking must not depend on the audit write; the log keeps it.
			if s.log != nil {
				s.log.Error("recording precheck match", "account", accountID, "job", jobID, "list", res.List, "error", err.Error())
			}
		}
		return nil, &Blocked{Match: &res, Failure: domain.PrecheckFailure{
			Type: domain.PrecheckFailureNCMEC, Message: "the content matched a known-abuse hash list",
			ContentHash: contentHash, MatchConfidence: res.Confidence,
		}}
	}
	return &Image{Decoded: img, Format: format, Digests: d, PDQ: pdq, PDQQuality: quality, ContentHash: contentHash,
		release: release}, nil
}
