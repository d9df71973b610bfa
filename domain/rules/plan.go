package rules

// The compiled Plan and its parts: labels, rules, signals and contexts.

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Plan is a compiled policy or label version. It is immutable and safe for concurrent
// use.
type Plan struct {
	source     string
	labels     []*labelPlan
	docExcept  []*rulePlan
	docTmpl    [2][]AssertionReport
	priorities [][]int
	signals    []*signalPlan
	contexts   []*contextPlan
	byKind     map[SignalKind][]int // signal indices by kind, so evaluation skips kinds a plan lacks
	written    int                  // signals as written, before de-duplication
	ruleCount  int
	depth      int // deepest rule

	ac       *wordAutomaton
	patterns []patternRefs
	ed       *editIndex
	fv       *fuzzyVocab
	fuzzy    bool // any fuzzy phrase: build the fuzzy stream
	concepts *conceptIndex

	complexityScore float64
	statsOnce       sync.Once
	stats           Stats
}

type labelPlan struct {
	name, message string
	rules         []*rulePlan
	except        []*rulePlan
	hasExcept     bool
	// Report templates for rules and except; see reportTemplate.
	rulesTmpl, exceptTmpl [2][]AssertionReport
}

// reportTemplate pre-builds the assertion reports of a rule list, FALSE with score 0,
// with messages plain ([0]) or marked lexical ([1]). Evaluate copies a template and
// overwrites scores and the few results that differ: one bulk copy instead of a
// thousand pointer writes, each behind a GC write barrier.
func reportTemplate(rules []*rulePlan) [2][]AssertionReport {
	var t [2][]AssertionReport
	for k := range t {
		t[k] = make([]AssertionReport, len(rules))
		for i, r := range rules {
			msg := r.src
			if k == 1 && r.lexical {
				msg += " (lexical match)"
			}
			t[k][i] = AssertionReport{Result: OutcomeFalse, Message: msg}
		}
	}
	return t
}

type rulePlan struct {
	src     string
	root    *node
	lexical bool // contains a concept scored by the built-in lexical matcher
}

type node struct {
	kind exprKind
	sig  int // signal index, or context index for exContext
	kids []*node
}

type signalPlan struct {
	kind      SignalKind
	text      string
	re        *regexp.Regexp
	sentiment string
	hashAlgo  string
	hashRef   []byte
	maxDist   int
	concept   *conceptPlan
	direct    bool // used outside a context condition: a model backend must score it alone
}

type contextPlan struct {
	left, right int // signal indices
	op          string
	src         string
}

// patternRefs says which signals one automaton pattern stands for.
type patternRefs struct {
	exact []int32
	fuzzy []fuzzyRef
}

type fuzzyRef struct {
	sig   int32
	norms []string // the phrase's words as spelled (ftoken.spell), for the dictionary guard
}

// source renders a signal back in the rule language, for model prompts.
func (s *signalPlan) source() string {
	q := quoteRule(s.text)
	switch s.kind {
	case SignalConcept:
		return q
	case SignalExact:
		return "=(" + q + ")"
	case SignalFuzzy:
		return "~(" + q + ")"
	case SignalHash:
		if s.hashAlgo == "pdq" {
			return fmt.Sprintf("HASH(%s, %d)", q, s.maxDist)
		}
	}
	return strings.ToUpper(string(s.kind)) + "(" + q + ")"
}

func quoteRule(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Labels returns the label names in document order.
func (p *Plan) Labels() []string {
	out := make([]string, len(p.labels))
	for i, l := range p.labels {
		out[i] = l.name
	}
	return out
}
