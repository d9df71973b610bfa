package imaging

import (
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/contenteval/contenteval/domain"
)

// Bands are the PDQ distance bands of the precheck (--pdq-bands): a match at
// distance <= High is HIGH confidence, <= Medium MEDIUM, <= Low LOW, and
// anything farther is no match.
type Bands struct {
	High, Medium, Low int
}

// DefaultBands are the documented defaults: <=10 HIGH, <=20 MEDIUM,
// <=31 LOW. 31 is the distance ThreatExchange recommends for PDQ matching.
func DefaultBands() Bands { return Bands{High: 10, Medium: 20, Low: 31} }

// Validate checks 0 <= High <= Medium <= Low <= 256.
func (b Bands) Validate() error {
	if b.High < 0 || b.High > b.Medium || b.Medium > b.Low || b.Low > 256 {
		return fmt.Errorf("pdq bands must satisfy 0 <= high <= medium <= low <= 256, got %d/%d/%d", b.High, b.Medium, b.Low)
	}
	return nil
}

// Confidence returns the band of a PDQ distance, or false beyond Low.
func (b Bands) Confidence(distance int) (domain.PrecheckMatchConfidence, bool) {
	switch {
	case distance < 0 || distance > b.Low:
		return "", false
	case distance <= b.High:
		return domain.MatchConfidenceHigh, true
	case distance <= b.Medium:
		return domain.MatchConfidenceMedium, true
	}
	return domain.MatchConfidenceLow, true
}

// RecommendedMinPDQQuality is the PDQ quality below which ThreatExchange
// advises not to match: near-flat images hash to noise that can land near
// anything. Callers pass hasPDQ=false to Check for such images.
const RecommendedMinPDQQuality = 50

// Result is the outcome of Matcher.Check.
type Result struct {
	Matched    bool
	Confidence domain.PrecheckMatchConfidence // EXACT for md5/sha1, a band for PDQ
	Kind       Kind                           // which hash matched
	List       string                         // the hash list that matched
	Distance   int                            // PDQ Hamming distance; 0 for exact matches
}

// HashLists is an immutable snapshot of the loaded hash lists: exact md5
// and sha1 sets and a PDQ index. Build one with NewHashLists and install
// it with Matcher.Load; reloading lists is building a new snapshot.
type HashLists struct {
	md5   map[[16]byte]uint16
	sha1  map[[20]byte]uint16
	lists []string
	pdq   *Index
}

// ExactEntry is one md5 or sha1 hash (hex, either case) of a hash list.
type ExactEntry struct {
	Hex  string
	List string
}

// NewHashLists builds a snapshot. A malformed md5 or sha1 hex string is an
// error (lists are validated on import, so this is a bug, not user input).
// When a hash is in several lists, the first given wins.
func NewHashLists(md5s, sha1s []ExactEntry, pdqs []IndexEntry) (*HashLists, error) {
	hl := &HashLists{md5: make(map[[16]byte]uint16, len(md5s)), sha1: make(map[[20]byte]uint16, len(sha1s))}
	ids := map[string]uint16{}
	listID := func(name string) (uint16, error) {
		if id, ok := ids[name]; ok {
			return id, nil
		}
		if len(hl.lists) == MaxIndexLists {
			return 0, fmt.Errorf("more than %d hash lists", MaxIndexLists)
		}
		id := uint16(len(hl.lists))
		ids[name] = id
		hl.lists = append(hl.lists, name)
		return id, nil
	}
	for _, e := range md5s {
		var k [16]byte
		if err := decodeHexInto(k[:], e.Hex); err != nil {
			return nil, fmt.Errorf("md5 %q of list %q: %w", e.Hex, e.List, err)
		}
		id, err := listID(e.List)
		if err != nil {
			return nil, err
		}
		if _, dup := hl.md5[k]; !dup {
			hl.md5[k] = id
		}
	}
	for _, e := range sha1s {
		var k [20]byte
		if err := decodeHexInto(k[:], e.Hex); err != nil {
			return nil, fmt.Errorf("sha1 %q of list %q: %w", e.Hex, e.List, err)
		}
		id, err := listID(e.List)
		if err != nil {
			return nil, err
		}
		if _, dup := hl.sha1[k]; !dup {
			hl.sha1[k] = id
		}
	}
	ix, err := NewIndex(pdqs)
	if err != nil {
		return nil, err
	}
	hl.pdq = ix
	return hl, nil
}

func decodeHexInto(dst []byte, s string) error {
	if len(s) != 2*len(dst) {
		return fmt.Errorf("want %d hex digits", 2*len(dst))
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}

// Len returns the number of md5, sha1 and PDQ hashes in the snapshot.
func (hl *HashLists) Len() (md5s, sha1s, pdqs int) {
	if hl == nil {
		return 0, 0, 0
	}
	return len(hl.md5), len(hl.sha1), hl.pdq.Len()
}

// Matcher checks content against the current hash lists. Check may run on
// any number of goroutines while Load swaps in a new snapshot: each Check
// sees one whole snapshot, old or new, never a mix.
type Matcher struct {
	lists atomic.Pointer[HashLists]
}

// NewMatcher returns a Matcher holding hl (nil: no lists, nothing matches).
func NewMatcher(hl *HashLists) *Matcher {
	m := &Matcher{}
	m.Load(hl)
	return m
}

// Load installs a new snapshot; checks already running finish on the old
// one.
func (m *Matcher) Load(hl *HashLists) { m.lists.Store(hl) }

// Lists returns the snapshot in use (nil when none is loaded).
func (m *Matcher) Lists() *HashLists { return m.lists.Load() }

// Check looks content up: exact md5, then exact sha1 (EXACT confidence),
// then the nearest PDQ hash within bands.Low, banded by distance. md5hex and
// sha1hex are the lowercase or uppercase hex digests of the content bytes
// (empty to skip); hasPDQ says whether pdq is a hash of the content (false
// for non-images, undecodable images and, per RecommendedMinPDQQuality,
// low-quality ones). The zero Bands means DefaultBands; invalid bands match
// nothing by PDQ, so validate configured bands at start-up.
func (m *Matcher) Check(md5hex, sha1hex string, pdq Hash, hasPDQ bool, bands Bands) Result {
	hl := m.lists.Load()
	if hl == nil {
		return Result{}
	}
	var k5 [16]byte
	if md5hex != "" && decodeHexInto(k5[:], md5hex) == nil {
		if id, ok := hl.md5[k5]; ok {
			return Result{Matched: true, Confidence: domain.MatchConfidenceExact, Kind: KindMD5, List: hl.lists[id]}
		}
	}
	var k1 [20]byte
	if sha1hex != "" && decodeHexInto(k1[:], sha1hex) == nil {
		if id, ok := hl.sha1[k1]; ok {
			return Result{Matched: true, Confidence: domain.MatchConfidenceExact, Kind: KindSHA1, List: hl.lists[id]}
		}
	}
	if bands == (Bands{}) {
		bands = DefaultBands()
	}
	if !hasPDQ || bands.Validate() != nil {
		return Result{}
	}
	match, ok := hl.pdq.Nearest(pdq, bands.Low)
	if !ok {
		return Result{}
	}
	conf, ok := bands.Confidence(match.Distance)
	if !ok {
		return Result{}
	}
	return Result{Matched: true, Confidence: conf, Kind: KindPDQ, List: match.List, Distance: match.Distance}
}
