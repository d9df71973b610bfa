package rules

// Compound splitting: words run together ("youidiot") split into dictionary
// and phrase words.

import (
	"unicode"
)

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
