package rules

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
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
	// dictBloom is a Bloom filter of the same hashes (2 bits a word in 4 Mbit, 512 KiB,
	// about 1.5% false positives): compound splitting asks about many substrings that
	// are no word, and the filter answers most of them from the CPU caches without
	// touching the map or evicting content words from dictCache.
	dictBloom []uint64
)

const dictBloomBits = 1 << 22

func bloomBits(h uint64) (uint64, uint64) {
	return h & (dictBloomBits - 1), (h >> 32) & (dictBloomBits - 1)
}

func dictHash(w string) uint64 { return maphash.String(dictSeed, w) }

func loadDict() {
	dict = make(map[uint64]struct{}, 280000)
	dictBloom = make([]uint64, dictBloomBits/64)
	zr, err := gzip.NewReader(bytes.NewReader(englishWordsGz))
	if err != nil {
		panic("rules: embedded word list is corrupt: " + err.Error())
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		h := dictHash(sc.Text())
		dict[h] = struct{}{}
		a, b := bloomBits(h)
		dictBloom[a/64] |= 1 << (a % 64)
		dictBloom[b/64] |= 1 << (b % 64)
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

// maybeDictWord is isDictWord for words that are mostly not words: the Bloom filter
// turns most of them away before the cache and the map.
func maybeDictWord(w string) bool {
	dictOnce.Do(loadDict)
	a, b := bloomBits(dictHash(w))
	if dictBloom[a/64]&(1<<(a%64)) == 0 || dictBloom[b/64]&(1<<(b%64)) == 0 {
		return false
	}
	return isDictWord(w)
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

// A token's dictionary status, once apply or splitCompounds has looked it up.
const (
	dictUnknown int8 = iota
	dictNo
	dictYes
)

// fuzzyWord is one word of a fuzzy phrase: as spelled (ftoken.spell), and in fuzzy
// form.
type fuzzyWord struct{ spell, form string }

// The fuzzy vocabulary's values are automaton word ids with these flags.
const (
	fvInflected uint32 = 1 << 31 // a regular inflection of the word: "idiots" for "idiot"
	fvSwapped   uint32 = 1 << 30 // a 4-letter word with two adjacent letters swapped
	fvIDMask           = fvSwapped - 1
)

// fuzzyVocab maps the fuzzy form of a content token to the automaton word it stands
// for. It holds the automaton's vocabulary plus, for each word of a fuzzy phrase, its
// regular inflections and, for 4-letter words, their adjacent swaps, all computed
// when the plan compiles: a content token costs the one hash probe it cost before,
// whatever the number of phrases. The exact stream keeps the automaton's own
// vocabulary, so =("idiot") still never matches "idiots".
type fuzzyVocab struct {
	ids map[string]uint32
	// phraseLen is, by word id, the spelled length of a fuzzy phrase word (0 for words
	// of exact phrases only): a compound's part stands for the word only if it is as
	// long, so "kil" in "kilkenny" is not "kill" although both collapse to "kil".
	phraseLen []uint8
	// minLen and maxLen bound the spelled lengths of phrase words with variants, so
	// splitCompounds looks for them only at those lengths.
	minLen, maxLen int
	// starts holds the first three letters of each phrase word as spelled, and of its
	// inflections: most positions of a non-word start none of them, so looking for a
	// phrase word inside one costs a table read per letter rather than map probes.
	starts []bool
}

func trigram(s string) int {
	return (int(s[0]-'a')*26+int(s[1]-'a'))*26 + int(s[2]-'a')
}

// maxSuffix is the longest inflection suffix, in letters.
const maxSuffix = 3

// inflectionSuffixes are stripped, longest first, from a token no word is one edit
// from, to retry with its stem; forms are collapsed, so "-er"/"-ers" also cover
// doubled consonants ("stabber").
var inflectionSuffixes = []string{"ing", "ers", "ies", "ied", "es", "ed", "er", "s", "d", "r"}

func newFuzzyVocab(ac *wordAutomaton, words []fuzzyWord) *fuzzyVocab {
	fv := &fuzzyVocab{ids: make(map[string]uint32, len(ac.vocab)+8*len(words)), phraseLen: make([]uint8, len(ac.vocab)+1)}
	for w, id := range ac.vocab {
		fv.ids[w] = id
	}
	done := make([]bool, len(ac.vocab)+1)
	// Inflections first, swaps second: a form that is both keeps the better match,
	// and a form that is a phrase word already stays that word.
	for pass := 0; pass < 2; pass++ {
		for _, w := range words {
			id := ac.vocab[w.form]
			if id == 0 || done[id] {
				continue // a word repeated across phrases is varied once
			}
			done[id] = true
			// Bounded like the edit index: a 64 KiB phrase word gets no variants.
			if len(w.spell) > maxEditRunes || !asciiLetters(w.spell) {
				continue
			}
			if pass == 0 {
				if l := uint8(len(w.spell)); fv.phraseLen[id] == 0 || l < fv.phraseLen[id] {
					fv.phraseLen[id] = l
				}
				fv.minLen, fv.maxLen = min(fv.minLen, len(w.spell)), max(fv.maxLen, len(w.spell))
				if fv.minLen == 0 {
					fv.minLen = len(w.spell)
				}
				if len(w.spell) >= 3 {
					if fv.starts == nil {
						fv.starts = make([]bool, 26*26*26)
					}
					f := w.spell
					fv.starts[trigram(f)] = true
					if len(f) == 3 {
						// Only a 3-letter word's inflections can start otherwise:
						// "dying", "hoing", "cries".
						fv.starts[trigram(f[:2]+"i")] = true
						fv.starts[trigram(f[:1]+"yi")] = true
					}
				}
				forEachInflectedForm(w.form, func(f string) { fv.add(f, id|fvInflected) })
				continue
			}
			if len(w.spell) != 4 {
				continue
			}
			for i := 0; i+1 < len(w.spell); i++ {
				if w.spell[i] != w.spell[i+1] {
					b := []byte(w.spell)
					b[i], b[i+1] = b[i+1], b[i]
					fv.add(fuzzyForm(string(b)), id|fvSwapped)
				}
			}
		}
		clear(done)
	}
	return fv
}

// forEachInflectedForm calls f with the fuzzy forms of the regular inflections of a
// word given in fuzzy form (letters, runs collapsed). Collapsed forms keep the last
// letter, which is all the rules look at, and make doubled consonants ("stabbed")
// and "'s" fall together with the plain suffixes; building them here rather than
// through inflections and fuzzyForm keeps compiling 10,000 phrases cheap.
func forEachInflectedForm(form string, f func(string)) {
	n := len(form)
	if n < 2 {
		return
	}
	emit := func(stem, suffix string) {
		if stem != "" && suffix != "" && stem[len(stem)-1] == suffix[0] {
			suffix = suffix[1:]
		}
		if x := stem + suffix; x != form {
			f(x)
		}
	}
	for _, suf := range []string{"s", "ed", "ing", "er", "ers"} {
		emit(form, suf)
	}
	switch last := form[n-1]; {
	case last == 'e':
		emit(form, "d")
		emit(form, "r")
		emit(form, "rs")
		if form[n-2] == 'i' {
			emit(form[:n-2], "ying")
		} else {
			emit(form[:n-1], "ing")
		}
	case last == 'y' && !isVowel(form[n-2]):
		for _, suf := range []string{"ies", "ied", "ier", "iers"} {
			emit(form[:n-1], suf)
		}
	case strings.IndexByte("sxzo", last) >= 0 || strings.HasSuffix(form, "ch") || strings.HasSuffix(form, "sh"):
		emit(form, "es")
	}
}

func (fv *fuzzyVocab) add(form string, v uint32) {
	if _, ok := fv.ids[form]; !ok && form != "" {
		fv.ids[form] = v
	}
}

func asciiLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return s != ""
}

func isVowel(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }

// inflections returns the regular inflections of a word of lower-case letters, as
// spelled: plural and third person (-s, -es, -ies), past (-ed, -d, -ied), -ing (with
// the silent e dropped, ie to y), agent noun -er and its plural, possessive 's, and
// the doubled final consonant of a short vowel ("stabbed"). Fewer than 3 letters get
// none: "ass" is a word to inflect, "ho" is too short to tell from a prefix.
func inflections(f string) []string {
	n := len(f)
	if n < 3 {
		return nil
	}
	last := f[n-1]
	out := []string{f + "s", f + "'s", f + "ed", f + "ing", f + "er", f + "ers"}
	switch {
	case last == 'e':
		out = append(out, f+"d", f+"r", f+"rs")
		switch {
		case strings.HasSuffix(f, "ie"):
			out = append(out, f[:n-2]+"ying")
		case !strings.HasSuffix(f, "ee"):
			out = append(out, f[:n-1]+"ing")
		}
	case last == 'y' && !isVowel(f[n-2]):
		stem := f[:n-1]
		out = append(out, stem+"ies", stem+"ied", stem+"ier", stem+"iers")
	case strings.ContainsRune("sxzo", rune(last)) || strings.HasSuffix(f, "ch") || strings.HasSuffix(f, "sh"):
		out = append(out, f+"es")
	}
	if !isVowel(last) && !strings.ContainsRune("wxy", rune(last)) && isVowel(f[n-2]) && !isVowel(f[n-3]) {
		d := f + string(last)
		out = append(out, d+"ed", d+"ing", d+"er", d+"ers")
	}
	return out
}

// isInflectionOf reports whether the normalised text word w is base itself or one of
// its regular inflections as spelled, so that the dictionary guard accepts "idiots"
// for "idiot" but not "rapper" for "rape", though both collapse to an inflected form.
func isInflectionOf(w, base string) bool {
	f := foldWord(base, false)
	w = strings.TrimSuffix(w, "'")
	if w == f {
		return true
	}
	for _, x := range inflections(f) {
		if w == x {
			return true
		}
	}
	return false
}

// Bounds of compound splitting: a token is split only if it is at most
// maxCompoundLetters letters, into parts of at most maxPartLetters, so a token costs
// at most maxCompoundLetters*maxPartLetters dictionary probes.
const (
	maxCompoundLetters = 24
	maxPartLetters     = 16
	maxCompoundParts   = 4
)

// splitCompounds replaces each unmatched token that splits entirely into dictionary
// words, one of them a fuzzy phrase word, by those words ("youidiot" -> "you",
// "idiot"), so a phrase matches words run together. Dictionary words are never split,
// so "skill" stays "skill"; "scunthorpe" has no such split. A capitalised word inside
// a sentence is taken for a name ("Middlesex") and left alone. toks is returned as is
// when nothing splits, which is nearly always.
func (fv *fuzzyVocab) splitCompounds(toks []ftoken, text string) []ftoken {
	var out []ftoken // nil until the first split
	for i := range toks {
		t := &toks[i]
		var parts []string
		if t.id == 0 && len(t.form) >= 4 && len(t.norm) <= 4*maxCompoundLetters && t.dict != dictYes {
			// The cheap tests first: the dictionary is large, and most of its probes
			// miss the CPU caches.
			if f := t.spell; len(f) <= maxCompoundLetters && asciiLetters(f) && fv.containsPhraseWord(f) &&
				(t.dict == dictNo || t.dict == dictUnknown && !isDictWord(f)) &&
				!(i > 0 && capitalised(text[t.start:t.end]) && !clauseBetween(text[toks[i-1].end:t.start])) {
				parts, _ = fv.split(f)
			}
		}
		if parts == nil {
			if out != nil {
				out = append(out, *t)
			}
			continue
		}
		if out == nil {
			out = append(make([]ftoken, 0, len(toks)+len(parts)), toks[:i]...)
		}
		for k, p := range parts {
			nt := *t
			nt.norm, nt.spell, nt.form = p, p, fuzzyForm(p)
			v := fv.ids[nt.form]
			nt.id, nt.infl, nt.approx, nt.dict = v&fvIDMask, v&fvInflected != 0, false, dictUnknown
			if k > 0 {
				nt.clause = false
			}
			out = append(out, nt)
		}
	}
	if out == nil {
		return toks
	}
	return out
}

// containsPhraseWord reports whether some part of f (lower-case letters) spells a
// fuzzy phrase word or one of its inflections: the cheap test before split, whose
// probes go to the large dictionary. The fuzzy vocabulary is small and stays in the
// caches, so a text of long non-words costs little more than before.
func (fv *fuzzyVocab) containsPhraseWord(f string) bool {
	if fv.starts == nil {
		return false
	}
	shortest := max(fv.minLen, 3) // phrasePart takes no shorter part
	for j := 0; j+shortest <= len(f); j++ {
		if !fv.starts[trigram(f[j:])] {
			continue
		}
		for i := j + shortest; i <= min(len(f), j+fv.maxLen+maxSuffix); i++ {
			if fv.phrasePart(f[j:i]) {
				return true
			}
		}
	}
	return false
}

// phrasePart reports whether part (lower-case letters) spells a fuzzy phrase word or
// one of its inflections, at least as long as the word.
func (fv *fuzzyVocab) phrasePart(part string) bool {
	if len(part) < 3 || len(part) > maxPartLetters {
		return false
	}
	// The vocabulary holds collapsed forms: collapse into buf without allocating
	// ("kill" -> "kil").
	var buf [maxPartLetters]byte
	k := 0
	for c := 0; c < len(part); c++ {
		if k == 0 || buf[k-1] != part[c] {
			buf[k] = part[c]
			k++
		}
	}
	v := fv.ids[string(buf[:k])]
	id := v & fvIDMask
	return v&fvSwapped == 0 && id != 0 && int(id) < len(fv.phraseLen) && fv.phraseLen[id] != 0 && len(part) >= int(fv.phraseLen[id])
}

// capitalised reports a word written like a name: an upper-case letter, then only
// lower-case ones.
func capitalised(s string) bool {
	first, lower := true, false
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		if first {
			if !unicode.IsUpper(r) {
				return false
			}
			first = false
			continue
		}
		if !unicode.IsLower(r) {
			return false
		}
		lower = true
	}
	return lower
}

// split finds the segmentation of f (lower-case letters) into the fewest parts, each a
// dictionary word or a fuzzy phrase word, at least one of them a phrase word; nil if
// there is none, with the number of dictionary probes it made. Single letters count
// only as "i", "a" and "u": the list has every letter, and "s"+"kill" is how an
// innocent plural would split.
func (fv *fuzzyVocab) split(f string) (parts []string, probes int) {
	n := len(f)
	const none = int8(-1)
	// best[h][i]: fewest parts covering f[:i], h = 1 if one of them is a phrase word.
	var best [2][maxCompoundLetters + 1]int8
	var from [2][maxCompoundLetters + 1]int8
	var fromH [2][maxCompoundLetters + 1]int8
	for h := range best {
		for i := range best[h] {
			best[h][i] = none
		}
	}
	best[0][0] = 0
	for i := 1; i <= n; i++ {
		for j := max(0, i-maxPartLetters); j < i; j++ {
			if best[0][j] == none && best[1][j] == none {
				continue
			}
			part := f[j:i]
			phrase := fv.phrasePart(part)
			if !phrase {
				if len(part) == 1 {
					if part != "i" && part != "a" && part != "u" {
						continue
					}
				} else if probes++; !maybeDictWord(part) {
					continue
				}
			}
			for h := 0; h < 2; h++ {
				if best[h][j] == none || best[h][j] >= maxCompoundParts {
					continue
				}
				nh := h
				if phrase {
					nh = 1
				}
				if c := best[h][j] + 1; best[nh][i] == none || c < best[nh][i] {
					best[nh][i], from[nh][i], fromH[nh][i] = c, int8(j), int8(h)
				}
			}
		}
	}
	if best[1][n] < 2 {
		return nil, probes
	}
	parts = make([]string, best[1][n])
	for i, h, k := n, 1, len(parts)-1; i > 0; k-- {
		j := int(from[h][i])
		parts[k] = f[j:i]
		i, h = j, int(fromH[h][i])
	}
	return parts, probes
}
