package rules

// Content analysis: UAX #29 word segmentation into units, clause and sentence
// boundaries, and the scratch buffers one evaluation reuses. Normalisation is in
// normalise.go, the fuzzy token stream in fuzzytokens.go.

import (
	"sort"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/sentences"
	"github.com/clipperhouse/uax29/v2/words"
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
	// Flagged spans while a report is built (spans.go).
	raw, flagged []Span
	pending      []pendingSpans
	offsets      []int32
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
