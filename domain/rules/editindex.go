package rules

// The edit index: pattern words at edit distance 1 from a fuzzy token.

import (
	"strings"
	"unicode/utf8"
)

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
// alone. An inflected token ("idoits") matches through its stem. It records on each
// token it looks at whether it is a dictionary word, for splitCompounds.
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
		if n < minEditLetters-1 || n > e.maxRunes+1+maxSuffix {
			continue
		}
		t.dict = dictNo
		if isDictWord(t.spell) {
			t.dict = dictYes
			continue
		}
		best := int32(-1)
		if n <= e.maxRunes+1 {
			best = e.lookup(t.form)
		}
		for _, suf := range inflectionSuffixes {
			if best >= 0 {
				break
			}
			if stem, ok := strings.CutSuffix(t.form, suf); ok && len(stem) >= minEditLetters-1 && len(stem) <= e.maxRunes+1 {
				best = e.lookup(stem)
			}
		}
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

// lookup returns the first indexed word within one edit of form, or -1.
func (e *editIndex) lookup(form string) int32 {
	best := int32(-1)
	consider := func(ids []int32) {
		for _, id := range ids {
			if (best < 0 || id < best) && withinOneEdit(form, e.words[id]) {
				best = id
			}
		}
	}
	consider(e.dels[form])
	forEachDeletion(form, func(d []byte) { consider(e.dels[string(d)]) })
	return best
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
