package rules

// The fuzzy vocabulary: phrase words with their regular inflections and swaps,
// computed when a plan compiles.

import (
	"strings"
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
