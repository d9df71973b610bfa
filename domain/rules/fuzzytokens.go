package rules

// The fuzzy token stream: how segments are regrouped into tokens so that
// obfuscated words ("k i l l", "k-i-l-l", "sh!t") are read as one word.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// letterLike reports a segment that spells letters: a spaced-script word or a run of
// styled letters. Two adjacent ones are one word written in mixed styles
// ("⒦⒤⒧⒧", "🇰🇮🇱🇱"), unlike an ideograph or an emoji next to a word.
func letterLike(seg string) bool {
	seen := false
	for _, r := range seg {
		if invisible(r) {
			continue
		}
		if !enclosedLetter(r) && !isSpaced(r) {
			return false
		}
		seen = true
	}
	return seen
}

func isLeetSymbol(r rune) bool {
	switch r {
	case '@', '$', '!', '|', '+', '€', '£':
		return true
	}
	return false
}

func isSeparator(r rune) bool {
	switch r {
	case '.', '-', '_', '*', '\'', '~', '·', '/', '\\', ',', '"', '`', '^', '=', ':':
		return true
	}
	return false
}

func isSpaced(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai)
}

// singleChar reports whether a piece of text is one letter or digit of a spaced script
// (or a styled letter), the building block of "k i l l"-style obfuscation. Invisible
// characters around it do not count.
func singleChar(s string) bool {
	if len(s) <= utf8.UTFMax {
		r, n := utf8.DecodeRuneInString(s)
		if n == len(s) {
			return isSpaced(r) || isLeetSymbol(r) || enclosedLetter(r)
		}
	}
	// The common case, a word: two ASCII characters, the second no separator, is
	// neither one character among invisible ones nor spaced characters. This runs for
	// every word of every text.
	if len(s) >= 2 && s[0] < utf8.RuneSelf && s[1] < utf8.RuneSelf && !isSeparator(rune(s[1])) {
		return false
	}
	if spacedChars(s) {
		return true
	}
	var one rune = -1
	for _, r := range s {
		switch {
		case invisible(r):
		case one >= 0:
			return false
		default:
			one = r
		}
	}
	return one >= 0 && (isSpaced(one) || isLeetSymbol(one) || enclosedLetter(one))
}

// spacedChars reports a segment such as "1.0" or "l.l": word segmentation keeps
// digits, and letters, joined by a period in one segment, so "i.d.1.0.t" and
// "k.1.l.l" hold one; there they are letters spelled with separators, like the
// single letters around them.
func spacedChars(s string) bool {
	if len(s) < 3 || len(s)%2 == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i%2 == 0 && !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') || i%2 == 1 && !isSeparator(rune(c)) {
			return false
		}
	}
	return true
}

// buildFuzzyTokens regroups segments into fuzzy tokens: leet symbols glued to a word
// join it ("sh!t", "@ss"), single letters joined by separators join ("k-i-l-l"), and
// runs of three or more single letters separated by spaces join ("k i l l").
func buildFuzzyTokens(toks []ftoken, pieces []piece, text string, segs []segment, unitOfSeg []int, units []unit) ([]ftoken, []piece) {
	pieces = joinSegments(pieces[:0], text, segs)
	merged := mergeSpelledOut(pieces, text)
	return appendFuzzyTokens(toks, merged, text, segs, unitOfSeg, units), merged
}

// joinSegments appends to pieces the candidate words of text: pass 1,
// within runs of segments with no whitespace between them.
func joinSegments(pieces []piece, text string, segs []segment) []piece {
	// Pass 1: within runs of segments with no whitespace between them.
	var curv piece
	for i := 0; i < len(segs); {
		if segs[i].class == segSpace {
			i++
			continue
		}
		j := i
		for j+1 < len(segs) && segs[j+1].class != segSpace {
			j++
		}
		if i == j && segs[i].class == segWord {
			// The common case: a word between spaces.
			pieces = append(pieces, piece{s0: i, s1: i, start: segs[i].start, end: segs[i].end, hasWord: true})
			i++
			continue
		}
		var cur *piece
		flush := func() {
			if cur != nil && cur.hasWord {
				pieces = append(pieces, *cur)
			}
			cur = nil
		}
		for k := i; k <= j; k++ {
			s := segs[k]
			seg := text[s.start:s.end]
			switch s.class {
			case segWord, segLeet:
				joins := cur != nil
				if s.class == segLeet && cur == nil && k+1 <= j && segs[k+1].class != segWord {
					continue // a lone symbol, not part of a word
				}
				if s.class == segLeet && strings.Trim(seg, "!") == "" && (k == j || segs[k+1].class != segWord) {
					flush() // trailing "!!!" is exclamation, not leetspeak
					continue
				}
				if joins && s.class == segWord && segs[k-1].class == segWord && !singleChar(text[cur.start:cur.end]) &&
					!(letterLike(seg) && letterLike(text[segs[k-1].start:segs[k-1].end])) {
					// two adjacent word segments (CJK ideographs, emoji) stay apart
					flush()
					joins = false
				}
				if !joins {
					flush()
					curv = piece{s0: k, s1: k, start: s.start, end: s.end}
					cur = &curv
				} else {
					cur.s1, cur.end = k, s.end
				}
				if s.class == segWord {
					cur.hasWord = true
				}
			case segGlue:
				// Invisible characters inside a word are obfuscation: "ki\u200bll".
				if cur != nil && k < j && (segs[k+1].class == segWord || segs[k+1].class == segLeet) {
					cur.s1, cur.end = k, s.end
				}
			case segPunct:
				// A separator between single characters is obfuscation: "k-i-l-l".
				if cur != nil && k+1 <= j && segs[k+1].class == segWord &&
					singleChar(text[segs[k-1].start:segs[k-1].end]) && singleChar(text[segs[k+1].start:segs[k+1].end]) && allSeparators(seg) {
					cur.s1, cur.end = k, s.end
					continue
				}
				flush()
			}
		}
		flush()
		i = j + 1
	}
	return pieces
}

// mergeSpelledOut merges, in place, runs of single-character pieces: pass 2.
func mergeSpelledOut(pieces []piece, text string) []piece {
	// Pass 2: runs of >= 3 single-character pieces separated only by spaces and
	// separators, as in "k i l l" or "k . i . l . l". Merging happens in place: the
	// output never runs ahead of the input.
	merged := pieces[:0]
	for i := 0; i < len(pieces); {
		j := i
		for j+1 < len(pieces) && singleChar(text[pieces[j].start:pieces[j].end]) &&
			singleChar(text[pieces[j+1].start:pieces[j+1].end]) && gapIsSeparator(text[pieces[j].end:pieces[j+1].start]) {
			j++
		}
		if j-i+1 >= 3 {
			merged = append(merged, piece{s0: pieces[i].s0, s1: pieces[j].s1, start: pieces[i].start, end: pieces[j].end, hasWord: true})
		} else {
			merged = append(merged, pieces[i:j+1]...)
		}
		i = j + 1
	}
	return merged
}

// appendFuzzyTokens appends the fuzzy tokens of the pieces to toks: their
// normalised text, fuzzy form and spelling.
func appendFuzzyTokens(toks []ftoken, merged []piece, text string, segs []segment, unitOfSeg []int, units []unit) []ftoken {
	for _, p := range merged {
		t := ftoken{start: p.start, end: p.end, u0: -1}
		if p.s0 == p.s1 && unitOfSeg[p.s0] >= 0 {
			// The common case, one plain word: no concatenation needed.
			t.u0, t.u1 = unitOfSeg[p.s0], unitOfSeg[p.s0]
			t.norm = units[t.u0].norm
			t.form = fuzzyForm(t.norm)
			t.spell = spelling(t.norm, t.form)
			if t.form != "" {
				toks = append(toks, t)
			}
			continue
		}
		var nb strings.Builder
		for k := p.s0; k <= p.s1; k++ {
			if u := unitOfSeg[k]; u >= 0 {
				if t.u0 < 0 {
					t.u0 = u
				}
				t.u1 = u
				nb.WriteString(units[u].norm)
			} else if segs[k].class == segLeet {
				nb.WriteString(text[segs[k].start:segs[k].end])
			}
		}
		if t.u0 < 0 {
			continue
		}
		t.norm = nb.String()
		t.form = fuzzyForm(t.norm)
		t.spell = spelling(t.norm, t.form)
		if t.form == "" {
			continue
		}
		toks = append(toks, t)
	}
	return toks
}

// piece is a run of segments that becomes one fuzzy token.
type piece struct {
	s0, s1     int // segment range, inclusive
	start, end int
	hasWord    bool
}

func allSeparators(s string) bool {
	for _, r := range s {
		if !isSeparator(r) {
			return false
		}
	}
	return true
}

func gapIsSeparator(s string) bool {
	visible := 0
	for _, r := range s {
		if invisible(r) {
			continue
		}
		if visible++; visible > 3 || !unicode.IsSpace(r) && !isSeparator(r) {
			return false
		}
	}
	return true
}
