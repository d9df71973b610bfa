package rules

// Normalisation of words: NFKC and case folding for the exact stream, and the
// fuzzy form (diacritics, confusables, styled letters, leetspeak, invisible
// characters, runs) for the fuzzy stream.

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

var foldPool = sync.Pool{New: func() any { c := cases.Fold(); return &c }}

// normWord applies NFKC and full case folding. ASCII, the common case, is folded
// without allocating.
func normWord(s string) string {
	ascii, upper := true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c >= 'A' && c <= 'Z' {
			upper = true
		}
	}
	if ascii {
		if !upper {
			return s
		}
		return strings.ToLower(s)
	}
	if !norm.NFKC.IsNormalString(s) {
		s = norm.NFKC.String(s)
	}
	c := foldPool.Get().(*cases.Caser)
	s = c.String(s)
	foldPool.Put(c)
	// Typographic apostrophes fold to the ASCII one so "you’re" and "you're" agree.
	if strings.ContainsAny(s, "\u2019\u2018\u02bc") {
		s = strings.NewReplacer("\u2019", "'", "\u2018", "'", "\u02bc", "'").Replace(s)
	}
	return s
}

// invisible reports characters that render as nothing and are typed into words to
// break matching: format characters (Cf: zero-width spaces and joiners, soft hyphens,
// direction marks, the BOM) and variation selectors.
func invisible(r rune) bool {
	if r < 0xAD {
		return false // below the soft hyphen, the first of them: keeps ASCII fast
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r)
}

// styledLetter maps the styled letters that NFKC leaves alone to their base letter:
// regional indicators (what flag emoji are made of) and the negative circled and
// negative squared capitals. NFKC already folds the mathematical alphanumerics,
// fullwidth, circled, squared and parenthesized forms (the last to "(k)", whose
// parentheses the fuzzy form drops).
func styledLetter(r rune) (rune, bool) {
	switch {
	case r >= 0x1F1E6 && r <= 0x1F1FF: // regional indicator symbols A-Z
		return 'a' + r - 0x1F1E6, true
	case r >= 0x1F150 && r <= 0x1F169: // negative circled capitals
		return 'a' + r - 0x1F150, true
	case r >= 0x1F170 && r <= 0x1F189: // negative squared capitals
		return 'a' + r - 0x1F170, true
	}
	return 0, false
}

// enclosedLetter reports a letter written as a symbol (So) that stands for a Latin
// letter or digit: the forms word segmentation does not treat as letters, so each is a
// segment of its own, like an emoji, unless the fuzzy stream joins them.
func enclosedLetter(r rune) bool {
	if _, ok := styledLetter(r); ok {
		return true
	}
	switch {
	case r >= 0x2460 && r <= 0x24FF: // enclosed alphanumerics: circled, parenthesized
		return true
	case r >= 0x1F100 && r <= 0x1F1FF: // enclosed alphanumeric supplement
		return true
	}
	return false
}

var leetDigits = [10]byte{'o', 'i', 0, 'e', 'a', 's', 0, 't', 'b', 'g'}

// extraSkeleton covers confusables whose TR39 prototype is itself not Latin.
var extraSkeleton = map[rune]rune{'ĸ': 'k', 'ı': 'i', 'ȷ': 'j', 'ɑ': 'a', 'ɡ': 'g'}

// fuzzyForm maps a normalised word to the form fuzzy phrases are matched in: diacritics
// removed, non-Latin look-alikes replaced by their TR39 prototype, styled letters by
// their base letter, leetspeak decoded in words that contain a letter, separators and
// invisible characters dropped and runs of one character collapsed.
func fuzzyForm(s string) string {
	if plainWord(s) {
		return s
	}
	return foldWord(s, true)
}

// foldWord is fuzzyForm with the collapsing of runs optional: dictionary look-ups need
// the letters as spelled ("kill", not "kil").
func foldWord(s string, collapse bool) string {
	hasLetter := false
	ascii := true
	for _, r := range s {
		if unicode.IsLetter(r) {
			hasLetter = true
		} else if _, ok := styledLetter(r); ok {
			hasLetter = true
		}
		if r >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii {
		s = norm.NFD.String(s)
	}
	out := make([]byte, 0, len(s))
	var last rune = -1
	emit := func(r rune) {
		if r == last && collapse {
			return
		}
		last = r
		out = utf8.AppendRune(out, r)
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			emit(r)
		case r >= '0' && r <= '9':
			if hasLetter && leetDigits[r-'0'] != 0 {
				emit(rune(leetDigits[r-'0']))
			} else {
				emit(r)
			}
		case r < utf8.RuneSelf:
			switch r {
			case '@':
				emit('a')
			case '$':
				emit('s')
			case '!', '|':
				emit('i')
			case '+':
				emit('t')
			}
		case unicode.Is(unicode.Mn, r):
		case invisible(r):
			// Dropped without breaking a run: "kil\u200bl" is "kill".
		case r == '€':
			emit('e')
		case r == '£':
			emit('l')
		default:
			if x, ok := styledLetter(r); ok {
				emit(x)
				continue
			}
			if x, ok := extraSkeleton[r]; ok {
				emit(x)
				continue
			}
			if repl := confusable.GetReplacement(r); repl != "" {
				for _, q := range repl {
					q = unicode.ToLower(q)
					if x, ok := extraSkeleton[q]; ok {
						q = x
					}
					if unicode.Is(unicode.Mn, q) {
						continue
					}
					emit(q)
				}
				continue
			}
			if unicode.IsPunct(r) || unicode.IsSpace(r) {
				continue
			}
			emit(unicode.ToLower(r))
		}
	}
	return string(out)
}

// spelling returns the spell of a token from its norm and fuzzy form without
// allocating in the common case, a word of lower-case ASCII letters.
func spelling(norm, form string) string {
	if norm == form || asciiLetters(norm) {
		return norm
	}
	return foldWord(norm, false)
}

// plainWord reports whether s is lower-case ASCII letters with no letter repeated
// twice in a row: its fuzzy form is itself, and most words of real text are like that.
func plainWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 'a' || c > 'z' || (i > 0 && s[i-1] == c) {
			return false
		}
	}
	return true
}
