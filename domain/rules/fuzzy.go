package rules

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// englishWordsGz is the word list of the npm package an-array-of-english-words
// (MIT, see data/english-words.LICENSE). Fuzzy matching consults it so that a correctly
// spelled word is never taken for an obfuscated one ("lover" is not "loser").
//
//go:embed data/english-words.txt.gz
var englishWordsGz []byte

var (
	dictOnce sync.Once
	// dict holds 64-bit hashes of the words rather than the words: a map without
	// pointers is not scanned by the garbage collector, which would otherwise walk
	// 275,000 strings on every cycle of a busy server. A false positive needs a 64-bit
	// collision among 275,000 words.
	dict     map[uint64]struct{}
	dictSeed = maphash.MakeSeed()
)

func dictHash(w string) uint64 { return maphash.String(dictSeed, w) }

func loadDict() {
	dict = make(map[uint64]struct{}, 280000)
	zr, err := gzip.NewReader(bytes.NewReader(englishWordsGz))
	if err != nil {
		panic("rules: embedded word list is corrupt: " + err.Error())
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		dict[dictHash(sc.Text())] = struct{}{}
	}
	if err := sc.Err(); err != nil {
		panic("rules: embedded word list is corrupt: " + err.Error())
	}
}

// dictCache is a direct-mapped cache in front of dict: the map is megabytes, so most
// probes miss the CPU caches, while content repeats the same few hundred words. Each
// entry is a word hash with its lowest bit replaced by the answer; entries are read and
// written atomically, so concurrent evaluations share it without locks.
var dictCache [8192]atomic.Uint64

// isDictWord reports whether a normalised word is a correctly spelled English word.
func isDictWord(w string) bool {
	dictOnce.Do(loadDict)
	h := dictHash(w)
	slot := &dictCache[h%uint64(len(dictCache))]
	if e := slot.Load(); e != 0 && e>>1 == h>>1 {
		return e&1 == 1
	}
	_, ok := dict[h]
	e := h &^ 1
	if ok {
		e |= 1
	}
	slot.Store(e)
	return ok
}

// minEditLetters is the shortest pattern word that also matches at edit distance 1;
// shorter words have too many innocent neighbours.
const minEditLetters = 5

// maxEditRunes bounds the pattern words indexed for edit distance. The index stores
// every one-rune deletion of a word, n strings of n bytes, so its cost is quadratic in
// the word: one 60,000-letter phrase word cost gigabytes and tens of seconds per
// compile. No real word is that long; a longer one still matches exactly and fuzzily,
// only not at edit distance 1.
const maxEditRunes = 64

// editIndex finds pattern words at edit distance 1 from a text token with the
// symmetric-delete method: every word is indexed under itself and each of its one-rune
// deletions, and a token is looked up the same way, so a lookup costs O(len(token))
// hash probes whatever the number of phrases.
type editIndex struct {
	words    []string
	dels     map[string][]int32
	maxRunes int // longest indexed word: a longer token is more than one edit from all
}

func newEditIndex() *editIndex {
	return &editIndex{dels: map[string][]int32{}}
}

func (e *editIndex) addWord(form string) {
	n := utf8.RuneCountInString(form)
	if n > maxEditRunes {
		return
	}
	for _, id := range e.dels[form] {
		if e.words[id] == form {
			return
		}
	}
	id := int32(len(e.words))
	e.words = append(e.words, form)
	e.dels[form] = append(e.dels[form], id)
	e.maxRunes = max(e.maxRunes, n)
	forEachDeletion(form, func(d []byte) { e.dels[string(d)] = append(e.dels[string(d)], id) })
}

// forEachDeletion calls f with s minus each of its runes in turn. The argument is only
// valid during the call: it aliases a scratch buffer so that lookups do not allocate.
func forEachDeletion(s string, f func([]byte)) {
	buf := make([]byte, 0, len(s))
	for i, r := range s {
		n := utf8.RuneLen(r)
		buf = append(buf[:0], s[:i]...)
		buf = append(buf, s[i+n:]...)
		f(buf)
	}
}

func (e *editIndex) empty() bool { return e == nil || len(e.words) == 0 }

// apply replaces the form of each token that is one edit away from a pattern word by
// that word, and marks it approximate so its matches score 0.8. Tokens that already
// are a pattern word (a non-zero id in the automaton) and dictionary words are left
// alone.
func (e *editIndex) apply(toks []ftoken, ac *wordAutomaton) {
	if e.empty() {
		return
	}
	for i := range toks {
		t := &toks[i]
		if t.id != 0 {
			continue
		}
		n := utf8.RuneCountInString(t.form)
		// The length test also keeps the lookup, quadratic in the token, off the
		// one-word 256 KiB texts a hostile client can send.
		if n < minEditLetters-1 || n > e.maxRunes+1 || isDictWord(t.norm) {
			continue
		}
		best := int32(-1)
		consider := func(ids []int32) {
			for _, id := range ids {
				if (best < 0 || id < best) && withinOneEdit(t.form, e.words[id]) {
					best = id
				}
			}
		}
		consider(e.dels[t.form])
		forEachDeletion(t.form, func(d []byte) { consider(e.dels[string(d)]) })
		if best < 0 {
			continue
		}
		t.form = e.words[best]
		t.approx = true
		if ac != nil {
			t.id = ac.vocab[t.form]
		}
	}
}

// withinOneEdit reports whether a and b differ by at most one insertion, deletion or
// substitution of a rune, or one swap of adjacent runes: the optimal-string-alignment
// distance, because swapped letters ("idoit") are as common a typo as a wrong one.
func withinOneEdit(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > len(rb) {
		ra, rb = rb, ra
	}
	if len(rb)-len(ra) > 1 {
		return false
	}
	i := 0
	for i < len(ra) && ra[i] == rb[i] {
		i++
	}
	if len(ra) == len(rb) {
		if i+1 < len(ra) && ra[i] == rb[i+1] && ra[i+1] == rb[i] && string(ra[i+2:]) == string(rb[i+2:]) {
			return true // adjacent swap
		}
		i++ // substitution at i
		return string(ra[min(i, len(ra)):]) == string(rb[min(i, len(rb)):])
	}
	return string(ra[i:]) == string(rb[i+1:])
}
