package rules

import (
	_ "embed"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kljensen/snowball/english"
)

// lexiconText is the synonym lexicon the built-in concept matcher expands concept
// words with; data/lexicon.txt documents its format.
//
//go:embed data/lexicon.txt
var lexiconText string

// conceptWindow is the span, in words, within which a concept's words must co-occur to
// count together; it is the same window as a context condition's.
const conceptWindow = 12

// maxConceptWords caps the content words of one concept; coverage is kept in a bitmask.
const maxConceptWords = 32

type lexGroup struct {
	name  []string        // stemmed words of the group name ("personal data")
	keys  map[string]bool // stems that select the group
	terms [][]string      // stemmed terms
}

var (
	lexOnce   sync.Once
	lexGroups []*lexGroup
)

func loadLexicon() {
	for _, line := range strings.Split(lexiconText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, list, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		g := &lexGroup{keys: map[string]bool{}, name: stemPhrase(strings.ReplaceAll(name, "-", " "))}
		if len(g.name) == 1 {
			g.keys[g.name[0]] = true
		}
		g.keys[stemWord(strings.ReplaceAll(name, "-", ""))] = true
		for _, t := range strings.Split(list, ",") {
			st := stemPhrase(t)
			if len(st) == 0 {
				continue
			}
			g.terms = append(g.terms, st)
			if len(st) == 1 {
				g.keys[st[0]] = true
			}
		}
		lexGroups = append(lexGroups, g)
	}
}

var (
	stemCache     sync.Map
	stemCacheSize atomic.Int64
)

// maxStemCache bounds the stem cache: content can hold unboundedly many distinct
// words, and a cache that grows with them is a memory leak an attacker can drive.
const maxStemCache = 200000

// stemWord stems one normalised word with the Snowball English stemmer. Stems are
// cached because content repeats the same words endlessly and stemming allocates.
func stemWord(w string) string {
	if v, ok := stemCache.Load(w); ok {
		return v.(string)
	}
	s := w
	if len(w) > 2 && len(w) < 40 && isASCIILetters(w) {
		s = english.Stem(w, true)
	}
	if len(w) < 40 && stemCacheSize.Load() < maxStemCache {
		if _, loaded := stemCache.LoadOrStore(w, s); !loaded {
			stemCacheSize.Add(1)
		}
	}
	return s
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && c != '\'' && c != '-' {
			return false
		}
	}
	return true
}

func stemPhrase(s string) []string {
	a := analyse(s, false)
	out := make([]string, 0, len(a.units))
	for _, u := range a.units {
		out = append(out, stemWord(u.norm))
	}
	return out
}

// stopwords are dropped from concepts: they carry no topic and would make every
// concept half-covered by any English sentence.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of to in on at for with about and or but is are was were be
		been being that this these those it its by from as into onto any some content text message
		post posts mention mentions mentioning containing contains contain describing describes
		discussion discussing related regarding reference references referring involving
		something anything type kind form forms use using used other others such like very
		not no do does did has have had can could should would may might must their there what which
		who whom whose how why when where`) {
		m[w] = true
	}
	return m
}()

// conceptPlan is the lexical form of one concept: for each content word, the stems
// and stemmed phrases that count as covering it.
type conceptPlan struct {
	words []string // the content words, for explanations
}

type conceptHit struct {
	sig  int32
	word uint8
	rest []string // remaining stems of a multi-word term
}

// conceptIndex maps a stem to every concept word it covers, across the whole plan, so
// one pass over the content's stems serves all concepts.
type conceptIndex struct {
	byStem map[string][]conceptHit
	sigs   []int32
	nwords map[int32]int
}

func newConceptIndex() *conceptIndex {
	return &conceptIndex{byStem: map[string][]conceptHit{}, nwords: map[int32]int{}}
}

func (ci *conceptIndex) add(sig int32, text string) *conceptPlan {
	lexOnce.Do(loadLexicon)
	a := analyse(text, false)
	var content []string
	for _, u := range a.units {
		if !stopwords[u.norm] {
			content = append(content, u.norm)
		}
	}
	if len(content) == 0 {
		for _, u := range a.units {
			content = append(content, u.norm)
		}
	}
	stems := make([]string, len(content))
	for i, w := range content {
		stems[i] = stemWord(w)
	}
	// A multi-word group name in the concept ("personal data", "self harm") is one
	// concept word covered by its group, not two words covered separately.
	type cword struct {
		text   string
		stem   string
		groups []*lexGroup
	}
	var cwords []cword
	for i := 0; i < len(stems); {
		var g *lexGroup
		for _, cand := range lexGroups {
			if len(cand.name) > 1 && i+len(cand.name) <= len(stems) && equalStrings(stems[i:i+len(cand.name)], cand.name) {
				g = cand
				break
			}
		}
		if g != nil {
			cwords = append(cwords, cword{text: strings.Join(content[i:i+len(g.name)], " "), groups: []*lexGroup{g}})
			i += len(g.name)
			continue
		}
		cw := cword{text: content[i], stem: stems[i]}
		for _, cand := range lexGroups {
			if cand.keys[stems[i]] {
				cw.groups = append(cw.groups, cand)
			}
		}
		cwords = append(cwords, cw)
		i++
	}
	if len(cwords) == 0 {
		return nil
	}
	if len(cwords) > maxConceptWords {
		cwords = cwords[:maxConceptWords]
	}
	cp := &conceptPlan{}
	ci.sigs = append(ci.sigs, sig)
	ci.nwords[sig] = len(cwords)
	for wi, cw := range cwords {
		cp.words = append(cp.words, cw.text)
		seen := map[string]bool{}
		addTerm := func(term []string) {
			key := strings.Join(term, " ")
			if seen[key] {
				return
			}
			seen[key] = true
			ci.byStem[term[0]] = append(ci.byStem[term[0]], conceptHit{sig: sig, word: uint8(wi), rest: term[1:]})
		}
		if cw.stem != "" {
			addTerm([]string{cw.stem})
		}
		for _, g := range cw.groups {
			for _, t := range g.terms {
				addTerm(t)
			}
		}
	}
	return cp
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// conceptOccurrences scores every concept of the plan on the analysed text: the score is
// the largest fraction of a concept's words covered within any window of
// conceptWindow words.
func (ci *conceptIndex) evaluate(a *analysis) map[int32]sigResult {
	out := make(map[int32]sigResult, len(ci.sigs))
	if len(ci.sigs) == 0 {
		return out
	}
	if a.stems == nil {
		a.stems = make([]string, len(a.units))
		for i, u := range a.units {
			a.stems[i] = stemWord(u.norm)
		}
	}
	type hit struct {
		pos, end int
		word     uint8
	}
	hits := map[int32][]hit{}
	for i, st := range a.stems {
		for _, h := range ci.byStem[st] {
			end := i
			if len(h.rest) > 0 {
				if i+len(h.rest) >= len(a.stems) {
					continue
				}
				ok := true
				for k, r := range h.rest {
					if a.stems[i+1+k] != r {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
				end = i + len(h.rest)
			}
			hits[h.sig] = append(hits[h.sig], hit{pos: i, end: end, word: h.word})
		}
	}
	for _, sig := range ci.sigs {
		n := ci.nwords[sig]
		hs := hits[sig]
		var res sigResult
		best := 0
		for i := range hs {
			var mask uint32
			last := hs[i].end
			for j := i; j < len(hs) && hs[j].pos < hs[i].pos+conceptWindow; j++ {
				mask |= 1 << hs[j].word
				last = max(last, hs[j].end)
			}
			c := popcount(mask)
			if c > best {
				best = c
				res.occ, res.capped = res.occ[:0], false
			}
			if c == best && c > 0 {
				if len(res.occ) < maxOccurrences {
					res.occ = append(res.occ, occurrence{u0: hs[i].pos, u1: last, start: a.units[hs[i].pos].start, end: a.units[last].end, score: float64(c) / float64(n)})
				} else {
					res.capped = true
				}
			}
		}
		if n > 0 {
			res.score = float64(best) / float64(n)
		}
		out[sig] = res
	}
	return out
}

func popcount(x uint32) int {
	n := 0
	for x != 0 {
		x &= x - 1
		n++
	}
	return n
}
