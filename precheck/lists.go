package precheck

import (
	"context"
	"fmt"
	"sort"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/prometheus/client_golang/prometheus"
)

// snapshot is an immutable view of every list, built aside by Reload and
// swapped in atomically: a check sees one whole snapshot, old or new.
type snapshot struct {
	lists []listInfo
	byID  map[string]int
	md5   map[[16]byte][]uint16
	sha1  map[[20]byte][]uint16
	pdq   *imaging.Index
	// maxLow is the farthest PDQ distance any list matches at.
	maxLow int
}

type listInfo struct {
	list  *domain.HashList
	bands domain.HashBands
}

// hit is one list's match of a content.
type hit struct {
	list       *listInfo
	hash       string
	kind       domain.HashKind
	distance   int
	confidence domain.PrecheckMatchConfidence
	// source and note are the hash's provenance, read when the hit is
	// recorded.
	source, note string
}

// effectiveBands are a list's bands, or the server's (which have no EXACT
// band for PDQ).
func (s *Service) effectiveBands(l *domain.HashList) domain.HashBands {
	if l.Bands != nil {
		return *l.Bands
	}
	return domain.HashBands{Exact: -1, High: s.cfg.Bands.High, Medium: s.cfg.Bands.Medium, Low: s.cfg.Bands.Low}
}

// DefaultBands are the bands of lists that set none: the server's, with no
// EXACT band for PDQ.
func (s *Service) DefaultBands() domain.HashBands { return s.effectiveBands(&domain.HashList{}) }

func confidence(b domain.HashBands, d int) (domain.PrecheckMatchConfidence, bool) {
	switch {
	case d < 0 || d > b.Low:
		return "", false
	case d <= b.Exact:
		return domain.MatchConfidenceExact, true
	case d <= b.High:
		return domain.MatchConfidenceHigh, true
	case d <= b.Medium:
		return domain.MatchConfidenceMedium, true
	}
	return domain.MatchConfidenceLow, true
}

// build reads every list and its ACTIVE hashes (disabled and quarantined
// ones match nothing) into a new snapshot.
func (s *Service) build(ctx context.Context) (*snapshot, int, error) {
	ls, err := s.store.AllHashLists(ctx)
	if err != nil {
		return nil, 0, err
	}
	if len(ls) > imaging.MaxIndexLists {
		return nil, 0, fmt.Errorf("more than %d hash lists", imaging.MaxIndexLists)
	}
	snap := &snapshot{byID: make(map[string]int, len(ls)), md5: map[[16]byte][]uint16{}, sha1: map[[20]byte][]uint16{}}
	for i, l := range ls {
		info := listInfo{list: l, bands: s.effectiveBands(l)}
		snap.lists = append(snap.lists, info)
		snap.byID[l.ID] = i
		if l.Kind == domain.HashPDQ && info.bands.Low > snap.maxLow {
			snap.maxLow = info.bands.Low
		}
	}
	var pdqs []imaging.IndexEntry
	n := 0
	err = s.store.EachHashEntry(ctx, func(listID string, kind domain.HashKind, e domain.HashListEntry) error {
		i, ok := snap.byID[listID]
		if !ok || (e.State != "" && e.State != domain.HashActive) {
			return nil
		}
		n++
		id := uint16(i)
		switch kind {
		case domain.HashMD5:
			var k [16]byte
			if decodeHex(k[:], e.Hex) {
				snap.md5[k] = append(snap.md5[k], id)
			}
		case domain.HashSHA1:
			var k [20]byte
			if decodeHex(k[:], e.Hex) {
				snap.sha1[k] = append(snap.sha1[k], id)
			}
		case domain.HashPDQ:
			h, err := imaging.ParseHash(e.Hex)
			if err != nil {
				return fmt.Errorf("hash list %s: %w", listID, err)
			}
			pdqs = append(pdqs, imaging.IndexEntry{Hash: h, List: listID})
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if snap.pdq, err = imaging.NewIndex(pdqs); err != nil {
		return nil, 0, err
	}
	return snap, n, nil
}

func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// visible says whether a list applies to the account's content.
func visible(l *domain.HashList, accountID string) bool {
	return l.AccountID == "" || l.AccountID == accountID
}

// lookup returns the best match of every list of the account (or
// operator-wide) the content matches, nearest first.
func (snap *snapshot) lookup(accountID string, d imaging.Digests, pdq imaging.Hash, hasPDQ bool) []hit {
	if snap == nil {
		return nil
	}
	best := map[int]hit{}
	consider := func(i int, h hit) {
		info := &snap.lists[i]
		if !visible(info.list, accountID) {
			return
		}
		h.list = info
		if cur, ok := best[i]; !ok || h.distance < cur.distance {
			best[i] = h
		}
	}
	var k5 [16]byte
	if decodeHex(k5[:], d.MD5) {
		for _, i := range snap.md5[k5] {
			consider(int(i), hit{hash: d.MD5, kind: domain.HashMD5, confidence: domain.MatchConfidenceExact})
		}
	}
	var k1 [20]byte
	if decodeHex(k1[:], d.SHA1) {
		for _, i := range snap.sha1[k1] {
			consider(int(i), hit{hash: d.SHA1, kind: domain.HashSHA1, confidence: domain.MatchConfidenceExact})
		}
	}
	if hasPDQ {
		snap.pdq.Within(pdq, snap.maxLow, func(m imaging.Match) bool {
			i, ok := snap.byID[m.List]
			if !ok {
				return true
			}
			conf, ok := confidence(snap.lists[i].bands, m.Distance)
			if ok {
				consider(i, hit{hash: m.Hash.String(), kind: domain.HashPDQ, distance: m.Distance, confidence: conf})
			}
			return true
		})
	}
	out := make([]hit, 0, len(best))
	for _, h := range best {
		out = append(out, h)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].distance != out[b].distance {
			return out[a].distance < out[b].distance
		}
		return out[a].list.list.ID < out[b].list.list.ID
	})
	return out
}

// metrics count matches, rejections and quarantines per list.
type metrics struct {
	matches, rejections, quarantines *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "contenteval_hash_list_matches_total",
			Help: "Contents a hash list matched (every mode), by list."}, []string{"list_id", "mode"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "contenteval_hash_list_rejections_total",
			Help: "Contents a hash list rejected, by list."}, []string{"list_id"}),
		quarantines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "contenteval_hash_list_quarantines_total",
			Help: "Hashes a list's flood limit quarantined, by list."}, []string{"list_id"}),
	}
	if reg != nil {
		// A second service of the process (the CLI builds one per command)
		// counts into the first one's counters.
		for _, c := range []**prometheus.CounterVec{&m.matches, &m.rejections, &m.quarantines} {
			if err := reg.Register(*c); err != nil {
				if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
					if prev, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
						*c = prev
					}
				}
			}
		}
	}
	return m
}

// Decision is what the lists say about one content.
type decision struct {
	reject *hit
	// allowed is the ALLOW list's match that won, if any.
	allowed *hit
}

// decide records the hits of a content and says whether it is rejected:
// an ALLOW match wins over everything; SHADOW matches are recorded; the
// nearest ENFORCE match whose hash is still ACTIVE (after counting this hit
// against its list's flood limit) rejects.
func (s *Service) decide(ctx context.Context, hits []hit, contentHash string, at *domain.FrameSegment, tally *Tally) (decision, error) {
	var dec decision
	for i := range hits {
		if hits[i].list.list.Mode == domain.HashListAllow {
			dec.allowed = &hits[i]
			break
		}
	}
	now := s.clock.Now()
	for i := range hits {
		h := &hits[i]
		l := h.list.list
		flood := -1
		if l.Mode == domain.HashListEnforce && dec.allowed == nil {
			if dec.reject != nil {
				continue // one rejection is enough
			}
			flood = l.FloodLimit
		}
		// An earlier frame of the content matched this hash and did not
		// reject: it is recorded already, and its state is the same. An
		// ENFORCE hit an ALLOW match let through is decided again on a
		// frame without the ALLOW match.
		if !tally.first(l.ID, h.hash, l.Mode != domain.HashListEnforce || dec.allowed == nil) {
			continue
		}
		out, err := s.store.RecordHit(ctx, domain.HashHit{ListID: l.ID, Hash: h.hash, ContentHash: contentHash, At: now}, flood)
		if err != nil {
			return dec, err
		}
		if !out.Found {
			continue // removed since the snapshot was built
		}
		h.source, h.note = out.Source, out.Note
		s.metrics.matches.WithLabelValues(l.ID, string(l.Mode)).Inc()
		if out.Quarantined {
			s.metrics.quarantines.WithLabelValues(l.ID).Inc()
			if s.log != nil {
				s.log.Warn("hash quarantined: it matched more distinct contents in an hour than its list's flood limit",
					"list", l.ID, "list_name", l.Name, "hash", h.hash, "flood_limit", l.FloodLimit)
			}
		}
		switch {
		case l.Mode == domain.HashListShadow:
			m := rules.PrecheckMatch{ListID: l.ID, ListName: l.Name, Kind: string(h.kind), Hash: h.hash, Distance: h.distance,
				Confidence: string(h.confidence), Source: h.source, Note: h.note}
			if at != nil {
				m.Frame = &rules.FrameTime{StartMs: at.StartMs, EndMs: at.EndMs}
			}
			tally.addShadow(m)
			if s.log != nil {
				args := []any{"list", l.ID, "list_name", l.Name, "hash", h.hash, "distance", h.distance, "source", h.source, "content_hash", contentHash}
				if at != nil {
					args = append(args, "start", timecode(at.StartMs), "end", timecode(at.EndMs))
				}
				s.log.Info("shadow hash-list match", args...)
			}
		case l.Mode == domain.HashListEnforce && dec.allowed == nil && out.State == domain.HashActive:
			s.metrics.rejections.WithLabelValues(l.ID).Inc()
			dec.reject = h
		}
	}
	return dec, nil
}
