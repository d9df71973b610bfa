package rules

import (
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/sentences"
	"github.com/clipperhouse/uax29/v2/words"
	"go.mau.fi/util/confusable"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// unit is one word of the content, as Unicode word segmentation (UAX #29) finds it:
// letters and digits of alphabetic scripts, each CJK ideograph, each emoji.
type unit struct {
	start, end int    // byte offsets in the original text
	norm       string // NFKC, case folded
	clause     bool   // a clause ends between the previous unit and this one
	// id is the norm's word id in the plan's automaton when idKnown: the fuzzy pass
	// already looked it up for plain words, whose fuzzy form is the norm itself.
	id      uint32
	idKnown bool
}

// ftoken is one token of the fuzzy stream. It may span several units, because
// obfuscation splits words ("k i l l", "k-i-l-l") and leetspeak symbols glue them
// back ("sh!t").
type ftoken struct {
	u0, u1     int // unit range, inclusive
	start, end int // byte offsets in the original text
	norm       string
	// spell is norm as a word is spelled once styled letters, leetspeak and invisible
	// characters are undone, runs kept: what the dictionary is asked about, so that
	// "l0ver" and "🅻🅾🆅🅴🆁" are "lover", a word, not one edit from "loser".
	spell  string
	form   string // fuzzy form: no diacritics, confusables mapped, leet decoded, runs collapsed
	approx bool   // form was replaced by a pattern word at edit distance 1, or by one swap
	infl   bool   // form is a regular inflection of a pattern word ("idiots"), mapped to it
	dict   int8   // whether spell is a dictionary word, once looked up (dictUnknown...)
	id     uint32 // the form's word id in the plan's automaton, 0 if no phrase has it
	clause bool   // a clause ends between the previous token and this one
}

// analysis is everything the built-in evaluators need from one content item. It is
// computed once per Evaluate call and shared by every signal of the plan.
type analysis struct {
	text  string
	units []unit
	ftoks []ftoken

	sentOnce []int    // sentence index of each unit, computed on first use (nil until then)
	stems    []string // snowball stems of units, computed on first use
}

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

type segClass int

const (
	segSpace segClass = iota
	segPunct
	segLeet
	segWord
	// segGlue is a segment of invisible characters only (a zero-width space splits a
	// word into three segments): inside a word it joins the two halves back.
	segGlue
)

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

// clauseEnd reports punctuation after which a phrase may not continue: a phrase that
// spans "kill. You" is two sentences, not one threat.
func clauseEnd(r rune) bool {
	switch r {
	case '.', '!', '?', ';', '\n', '\r', '。', '！', '？', '\u2029', '\u2028':
		return true
	}
	return false
}

func classify(seg string) segClass {
	if c := seg[0]; c < utf8.RuneSelf {
		// ASCII fast path: most segments start with a letter, a digit or a space.
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			return segWord
		case c == ' ' && len(seg) == 1:
			return segSpace
		}
	}
	allSpace, allLeet, allInvisible := true, true, true
	for _, r := range seg {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r) && r > 0x7f {
			return segWord
		}
		inv := invisible(r)
		if !inv {
			allInvisible = false
		}
		// Word segmentation attaches a format character to the space before it, so
		// " \u00ad" is still a space.
		if !unicode.IsSpace(r) && !inv {
			allSpace = false
		}
		if !isLeetSymbol(r) {
			allLeet = false
		}
	}
	switch {
	case allInvisible:
		return segGlue
	case allSpace:
		return segSpace
	case allLeet:
		return segLeet
	}
	return segPunct
}

// segment is a raw UAX #29 word-break segment.
type segment struct {
	start, end int
	class      segClass
}

// analyse segments and normalises text. fuzzy says whether the plan has fuzzy phrases,
// so that plans without them skip the costlier fuzzy stream.
// analyse analyses text with no plan: how phrases and concepts are analysed at
// compile time, exactly like content.
func analyse(text string, fuzzy bool) *analysis {
	return analyseInto(&scratch{}, text, fuzzy, nil, nil, nil)
}

// scratch holds the buffers of one evaluation. Evaluate takes one from scratchPool and
// returns it when the report is built (the report keeps none of them), so a busy
// server does not allocate and clear them for every content item.
type scratch struct {
	a         analysis
	segs      []segment
	unitOfSeg []int
	pieces    []piece
	ids       []uint32
	pos       []int32
	sig, ctx  []sigResult
	scores    []float64
}

var scratchPool = sync.Pool{New: func() any { return &scratch{} }}

// analyseInto is analyse with buffers reused from sc; with a plan's automaton, edit
// index and fuzzy vocabulary it also resolves fuzzy tokens to word ids (inflections
// and swaps included), applies edit distance and splits compounds.
func analyseInto(sc *scratch, text string, fuzzy bool, ac *wordAutomaton, ed *editIndex, fv *fuzzyVocab) *analysis {
	a := &sc.a
	*a = analysis{text: text, units: a.units[:0], ftoks: a.ftoks[:0]}
	segs := sc.segs[:0]
	it := words.FromString(text)
	for it.Next() {
		segs = append(segs, segment{start: it.Start(), end: it.End(), class: classify(it.Value())})
	}
	sc.segs = segs
	unitOfSeg := sc.unitOfSeg[:0]
	for range segs {
		unitOfSeg = append(unitOfSeg, -1)
	}
	sc.unitOfSeg = unitOfSeg
	for i, s := range segs {
		unitOfSeg[i] = -1
		if s.class == segWord {
			unitOfSeg[i] = len(a.units)
			a.units = append(a.units, unit{start: s.start, end: s.end, norm: normWord(text[s.start:s.end])})
		}
	}
	for i := 1; i < len(a.units); i++ {
		a.units[i].clause = clauseBetween(text[a.units[i-1].end:a.units[i].start])
	}
	if fuzzy {
		a.ftoks, sc.pieces = buildFuzzyTokens(a.ftoks, sc.pieces, text, segs, unitOfSeg, a.units)
		if ac != nil {
			for i := range a.ftoks {
				t := &a.ftoks[i]
				v := fv.ids[t.form]
				t.id = v & fvIDMask
				t.infl, t.approx = v&fvInflected != 0, v&fvSwapped != 0
				if v == t.id && t.u0 == t.u1 && t.form == a.units[t.u0].norm {
					a.units[t.u0].id, a.units[t.u0].idKnown = t.id, true
				}
			}
			ed.apply(a.ftoks, ac)
			a.ftoks = fv.splitCompounds(a.ftoks, text)
		}
		for i := 1; i < len(a.ftoks); i++ {
			// The parts of a split compound ("you|idiot") share their token's span.
			if a.ftoks[i-1].end <= a.ftoks[i].start {
				a.ftoks[i].clause = clauseBetween(text[a.ftoks[i-1].end:a.ftoks[i].start])
			}
		}
	}
	return a
}

// exactWords and fuzzyWords are the word sequences phrases are matched against, with
// sepWord where a clause ends.
func (a *analysis) exactWords() []string {
	out := make([]string, 0, len(a.units)+4)
	for _, u := range a.units {
		if u.clause {
			out = append(out, sepWord)
		}
		out = append(out, u.norm)
	}
	return out
}

func (a *analysis) fuzzyWords() []string {
	out := make([]string, 0, len(a.ftoks)+4)
	for _, t := range a.ftoks {
		if t.clause {
			out = append(out, sepWord)
		}
		out = append(out, t.form)
	}
	return out
}

func clauseBetween(gap string) bool {
	for _, r := range gap {
		if clauseEnd(r) {
			return true
		}
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
	pieces = pieces[:0]
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
	return toks, merged
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

// sentences returns the UAX #29 sentence index of every unit, computed on first use
// because only context conditions and sentiment need it.
func (a *analysis) sentenceOf() []int {
	if a.sentOnce != nil {
		return a.sentOnce
	}
	idx := make([]int, len(a.units))
	it := sentences.FromString(a.text)
	var bounds []int // end offsets of sentences
	for it.Next() {
		bounds = append(bounds, it.End())
	}
	for i, u := range a.units {
		idx[i] = sort.SearchInts(bounds, u.start+1)
	}
	a.sentOnce = idx
	return idx
}

// sentenceSpans returns the byte ranges of the sentences of the text.
func sentenceSpans(text string) [][2]int {
	var out [][2]int
	it := sentences.FromString(text)
	for it.Next() {
		out = append(out, [2]int{it.Start(), it.End()})
	}
	return out
}

// unitAtByte maps a byte offset of the original text to the unit containing or
// following it, for regex matches.
func (a *analysis) unitAtByte(off int) int {
	i := sort.Search(len(a.units), func(i int) bool { return a.units[i].end > off })
	if i >= len(a.units) {
		return len(a.units) - 1
	}
	return i
}
