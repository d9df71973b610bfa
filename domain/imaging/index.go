package imaging

import (
	"fmt"
	"math/bits"
)

// IndexEntry is one PDQ hash of a hash list.
type IndexEntry struct {
	Hash Hash
	List string // the name of the hash list it belongs to
}

// Match is the nearest list hash found by Index.Nearest.
type Match struct {
	Hash     Hash
	List     string
	Distance int
}

// IndexStrategy selects how an Index answers queries.
type IndexStrategy int

const (
	// StrategyAuto uses a linear scan for small lists and multi-index
	// hashing from MIHMinEntries entries on (see bench/results/imaging.md).
	StrategyAuto IndexStrategy = iota
	// StrategyLinear XORs and popcounts every hash: 34 bytes per hash, and
	// a query costs one pass over 32 bytes per hash.
	StrategyLinear
	// StrategyMIH is multi-index hashing (Norouzi et al.): the 256 bits are
	// cut into 16 substrings of 16 bits, each with a bucket table. Two
	// hashes within distance d agree within floor(d/16) bits on at least
	// one substring (pigeonhole), so probing each table at that radius
	// finds every hash within d. About 109 bytes per hash (see
	// bench/results/hashlists.md).
	StrategyMIH
)

// MIHMinEntries is the size from which StrategyAuto builds the multi-index
// tables: below it a scan takes well under a millisecond and the 4 MiB of
// bucket offsets would dominate the memory.
const MIHMinEntries = 1 << 16

// MaxIndexLists is the number of distinct list names an Index holds; list
// membership is stored as a uint16 to stay under 100 bytes per hash.
const MaxIndexLists = 1 << 16

const (
	mihTables  = 16 // substrings
	mihKeyBits = 16 // bits per substring
	mihBuckets = 1 << mihKeyBits
	// Beyond this radius per substring, probing costs more than a scan.
	mihMaxRadius = 3
)

// Index answers "the nearest PDQ hash within distance d" over a fixed set
// of hashes. It is immutable once built, so any number of goroutines may
// query it; to reload lists, build a new Index and swap it in (see
// Matcher).
type Index struct {
	n      int
	words  []uint64 // 4 words per hash, in index order
	listOf []uint16 // list of each hash, in index order
	lists  []string
	mih    bool
	// Multi-index tables. Hashes are stored sorted by substring 0, so table
	// 0 needs only bucket offsets; tables 1..15 also map bucket positions to
	// hash positions.
	offsets [mihTables][]uint32 // mihBuckets+1 each
	// postings of tables 1..15 (nil for table 0): per hash, in bucket
	// order, a record of postingBytes: its position (24 bits) and its
	// partner substring (16 bits; the other half of the same 32-bit chunk),
	// so most candidates are refused without reading their hash.
	postings [mihTables][]byte
}

// postingBytes is the size of a posting record: a 24-bit position and a
// 16-bit partner substring.
const postingBytes = 5

// MaxMIHEntries is the most hashes a multi-index holds (24-bit positions).
const MaxMIHEntries = 1<<24 - 1

// posting returns the position and partner substring of record i of a
// table's postings.
func posting(post []byte, i uint32) (int, uint16) {
	r := post[postingBytes*i : postingBytes*i+postingBytes : postingBytes*i+postingBytes]
	return int(r[0]) | int(r[1])<<8 | int(r[2])<<16, uint16(r[3]) | uint16(r[4])<<8
}

// NewIndex builds an index of entries with StrategyAuto.
func NewIndex(entries []IndexEntry) (*Index, error) {
	return NewIndexWithStrategy(entries, StrategyAuto)
}

// NewIndexWithStrategy builds an index with the given strategy. It fails
// only when entries name more than MaxIndexLists lists.
func NewIndexWithStrategy(entries []IndexEntry, s IndexStrategy) (*Index, error) {
	n := len(entries)
	if uint64(n) > 1<<32-1 {
		return nil, fmt.Errorf("pdq index: %d hashes is more than 2^32-1", n)
	}
	mih := s == StrategyMIH || (s == StrategyAuto && n >= MIHMinEntries)
	if mih && n > MaxMIHEntries {
		return nil, fmt.Errorf("pdq index: %d hashes is more than %d", n, MaxMIHEntries)
	}
	ix := &Index{n: n, mih: mih}

	listID := map[string]uint16{}
	ids := make([]uint16, n)
	for i, e := range entries {
		id, ok := listID[e.List]
		if !ok {
			if len(ix.lists) == MaxIndexLists {
				return nil, fmt.Errorf("pdq index: more than %d hash lists", MaxIndexLists)
			}
			id = uint16(len(ix.lists))
			listID[e.List] = id
			ix.lists = append(ix.lists, e.List)
		}
		ids[i] = id
	}

	// Order: by substring 0 for MIH (a stable counting sort, so equal keys
	// keep input order), input order otherwise.
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	if mih {
		keys := make([]uint16, n)
		for i, e := range entries {
			keys[i] = substring(e.Hash.words(), 0)
		}
		ix.offsets[0], order = countingSort(keys, order)
	}
	ix.words = make([]uint64, 4*n)
	ix.listOf = make([]uint16, n)
	for pos, i := range order {
		w := entries[i].Hash.words()
		copy(ix.words[4*pos:4*pos+4], w[:])
		ix.listOf[pos] = ids[i]
	}
	if !mih {
		return ix, nil
	}
	keys := make([]uint16, n)
	positions := order // reuse: fill with 0..n-1
	for t := 1; t < mihTables; t++ {
		for pos := range n {
			keys[pos] = substring(ix.wordsAt(pos), t)
			positions[pos] = uint32(pos)
		}
		var post []uint32
		ix.offsets[t], post = countingSort(keys, positions)
		rec := make([]byte, postingBytes*n)
		for i, pos := range post {
			partner := substring(ix.wordsAt(int(pos)), t^1)
			r := rec[postingBytes*i:]
			r[0], r[1], r[2], r[3], r[4] = byte(pos), byte(pos>>8), byte(pos>>16), byte(partner), byte(partner>>8)
		}
		ix.postings[t] = rec
	}
	return ix, nil
}

// countingSort returns the bucket offsets of keys and items reordered by
// key, stably.
func countingSort(keys []uint16, items []uint32) ([]uint32, []uint32) {
	offsets := make([]uint32, mihBuckets+1)
	for _, k := range keys {
		offsets[int(k)+1]++
	}
	for b := 1; b <= mihBuckets; b++ {
		offsets[b] += offsets[b-1]
	}
	next := make([]uint32, mihBuckets)
	copy(next, offsets[:mihBuckets])
	out := make([]uint32, len(items))
	for i, k := range keys {
		out[next[k]] = items[i]
		next[k]++
	}
	return offsets, out
}

func substring(w [4]uint64, t int) uint16 {
	return uint16(w[t>>2] >> (uint(t&3) * mihKeyBits))
}

func (ix *Index) wordsAt(pos int) [4]uint64 {
	return [4]uint64(ix.words[4*pos : 4*pos+4])
}

// Len returns the number of hashes in the index.
func (ix *Index) Len() int { return ix.n }

// Strategy returns the strategy the index was built with (never Auto).
func (ix *Index) Strategy() IndexStrategy {
	if ix.mih {
		return StrategyMIH
	}
	return StrategyLinear
}

// Nearest returns the hash nearest to h if its distance is at most
// maxDist. Ties go to the hash that sorts first in the index, so both
// strategies give the same answer.
func (ix *Index) Nearest(h Hash, maxDist int) (Match, bool) {
	if ix == nil || ix.n == 0 || maxDist < 0 {
		return Match{}, false
	}
	q := h.words()
	var pos, d int
	if ix.mih && maxDist/mihKeyBits <= mihMaxRadius {
		pos, d = ix.nearestMIH(q, maxDist)
	} else {
		pos, d = ix.nearestLinear(q, maxDist)
	}
	if pos < 0 {
		return Match{}, false
	}
	return ix.match(pos, d), true
}

func (ix *Index) match(pos, d int) Match {
	w := ix.wordsAt(pos)
	var h Hash
	for i, x := range w {
		for b := range 8 {
			h[8*i+b] = byte(x >> (56 - 8*b))
		}
	}
	return Match{Hash: h, List: ix.lists[ix.listOf[pos]], Distance: d}
}

func (ix *Index) nearestLinear(q [4]uint64, maxDist int) (int, int) {
	best, bestPos := maxDist+1, -1
	w := ix.words
	for pos := 0; len(w) >= 4; pos++ {
		d := bits.OnesCount64(w[0]^q[0]) + bits.OnesCount64(w[1]^q[1]) +
			bits.OnesCount64(w[2]^q[2]) + bits.OnesCount64(w[3]^q[3])
		if d < best {
			best, bestPos = d, pos
		}
		w = w[4:]
	}
	return bestPos, best
}

// masksByWeight lists the 16-bit masks with 0, 1, 2, 3 bits set.
var masksByWeight = func() (m [mihMaxRadius + 1][]uint16) {
	for v := range mihBuckets {
		if c := bits.OnesCount16(uint16(v)); c <= mihMaxRadius {
			m[c] = append(m[c], uint16(v))
		}
	}
	return m
}()

// nearestMIH probes radius 0 in every table, then radius 1, and so on up to
// maxDist/16. After radius r every hash within 16r+15 has been seen, so the
// search stops as soon as the best distance is that small.
func (ix *Index) nearestMIH(q [4]uint64, maxDist int) (int, int) {
	best, bestPos := maxDist+1, -1
	var qk [mihTables]uint16
	for t := range qk {
		qk[t] = substring(q, t)
	}
	consider := func(pos int) {
		w := ix.words[4*pos : 4*pos+4 : 4*pos+4]
		d := bits.OnesCount64(w[0]^q[0]) + bits.OnesCount64(w[1]^q[1]) +
			bits.OnesCount64(w[2]^q[2]) + bits.OnesCount64(w[3]^q[3])
		if d < best || (d == best && pos < bestPos) {
			best, bestPos = d, pos
		}
	}
	for r := 0; r <= maxDist/mihKeyBits; r++ {
		for t := range mihTables {
			off := ix.offsets[t]
			post := ix.postings[t]
			for _, m := range masksByWeight[r] {
				k := qk[t] ^ m
				lo, hi := off[k], off[int(k)+1]
				if t == 0 {
					for pos := lo; pos < hi; pos++ {
						consider(int(pos))
					}
					continue
				}
				for i := lo; i < hi; i++ {
					pos, _ := posting(post, i)
					consider(pos)
				}
			}
		}
		if best <= mihKeyBits*r+mihKeyBits-1 {
			break
		}
	}
	return bestPos, best
}
