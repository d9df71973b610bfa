package rules

// The compiler: limits and options, Compile, and how rules and signals become
// a Plan. The Plan's own types are in plan.go.

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Limits bound what one text may ask of the compiler and evaluator. Zero fields take
// the defaults; exceeding a limit is a compile error, not a crash or a slow request.
type Limits struct {
	MaxTextBytes int // default 64 KiB
	MaxDepth     int // nesting of parentheses, lists and NOT; default 32
	MaxRules     int // rules and exception rules; default 5,000
	MaxSignals   int // signals as written; default 10,000
	MaxLabels    int // LABEL/SECTION blocks; default 1,000
	// MaxRegexInsts bounds the instructions of the compiled REGEX programs of a text,
	// all of them together; default 500. See compiler.regex.
	MaxRegexInsts int
}

// DefaultLimits are the limits applied to zero fields of Limits.
var DefaultLimits = Limits{MaxTextBytes: 64 << 10, MaxDepth: 32, MaxRules: 5000, MaxSignals: 10000, MaxLabels: 1000,
	MaxRegexInsts: 500}

func (l Limits) withDefaults() Limits {
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = DefaultLimits.MaxTextBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxRules <= 0 {
		l.MaxRules = DefaultLimits.MaxRules
	}
	if l.MaxSignals <= 0 {
		l.MaxSignals = DefaultLimits.MaxSignals
	}
	if l.MaxLabels <= 0 {
		l.MaxLabels = DefaultLimits.MaxLabels
	}
	if l.MaxRegexInsts <= 0 {
		l.MaxRegexInsts = DefaultLimits.MaxRegexInsts
	}
	return l
}

// CompileOptions select what is compiled.
type CompileOptions struct {
	// LabelName, when set, compiles a label version: a list of rules for this label, or
	// exactly one LABEL/SECTION block. When empty the text is a policy document.
	LabelName string
	Limits    Limits
}

// Compile compiles a policy document or, when opts.LabelName is set, a label version:
// a list of rules named opts.LabelName, or exactly one LABEL/SECTION block, which keeps
// the name written in it. On failure the error is a *CompileErrors holding every error
// found (at most 100), each with its 1-based line and column; exceeding opts.Limits is
// a compile error too.
func Compile(text string, opts CompileOptions) (*Plan, error) {
	lim := opts.Limits.withDefaults()
	errs := &errorList{}
	if len(text) > lim.MaxTextBytes {
		errs.add(srcPos{Line: 1, Column: 1}, "text is %d bytes, more than the limit of %d", len(text), lim.MaxTextBytes)
		return nil, errs.result()
	}
	if !utf8.ValidString(text) {
		errs.add(srcPos{Line: 1, Column: 1}, "text is not valid UTF-8")
		return nil, errs.result()
	}
	ps := newParser(text, errs, lim.MaxDepth)
	doc := ps.parseDocument(opts.LabelName)
	c := &compiler{plan: &Plan{source: text, ed: newEditIndex(), concepts: newConceptIndex()}, errs: errs, lim: lim,
		sigIndex: map[string]int{}, patIndex: map[string]int{}}
	c.compileDoc(doc)
	if err := errs.result(); err != nil {
		return nil, err
	}
	c.buildAutomaton()
	for _, l := range c.plan.labels {
		l.rulesTmpl, l.exceptTmpl = reportTemplate(l.rules), reportTemplate(l.except)
	}
	c.plan.docTmpl = reportTemplate(c.plan.docExcept)
	c.plan.byKind = map[SignalKind][]int{}
	for i, s := range c.plan.signals {
		c.plan.byKind[s.kind] = append(c.plan.byKind[s.kind], i)
	}
	c.plan.complexityScore = c.plan.complexity()
	c.plan.ruleCount = c.rules
	return c.plan, nil
}

type compiler struct {
	plan     *Plan
	errs     *errorList
	lim      Limits
	sigIndex map[string]int
	patIndex map[string]int
	patterns [][]string
	fwords   []fuzzyWord // words of the fuzzy phrases, for their inflections and swaps
	// editForms are the fuzzy phrase words for the edit index, which is built once
	// they are all known so that its map is allocated at its final size: growing it
	// cost a fifth of compiling 10,000 phrases.
	editForms []string
	rules     int

	regexInsts int  // instructions of the REGEX programs so far
	regexOver  bool // the total was reported over the limit
}

func (c *compiler) compileDoc(doc *docAST) {
	p := c.plan
	if len(doc.labels) > c.lim.MaxLabels {
		c.errs.add(doc.labels[c.lim.MaxLabels].pos, "too many labels: the limit is %d", c.lim.MaxLabels)
	}
	seen := map[string]int{}
	for i, l := range doc.labels {
		if j, dup := seen[strings.ToLower(l.name)]; dup {
			c.errs.add(l.pos, "label %q is defined twice (first at line %d)", l.name, doc.labels[j].pos.Line)
		}
		seen[strings.ToLower(l.name)] = i
		lp := &labelPlan{name: l.name, message: l.message, hasExcept: l.hasExcept}
		for _, r := range l.rules {
			lp.rules = append(lp.rules, c.compileRule(r))
		}
		for _, r := range l.excepts {
			lp.except = append(lp.except, c.compileRule(r))
		}
		p.labels = append(p.labels, lp)
	}
	for _, r := range doc.excepts {
		p.docExcept = append(p.docExcept, c.compileRule(r))
	}
	if len(doc.labels) == 0 && len(c.errs.errs) == 0 {
		c.errs.add(srcPos{Line: 1, Column: 1}, "no labels: a policy needs at least one LABEL or SECTION block")
	}
	for _, pr := range doc.priorities {
		var chain []int
		inChain := map[int]bool{}
		for i, name := range pr.names {
			j, ok := seen[strings.ToLower(name)]
			if !ok {
				c.errs.add(pr.poss[i], "PRIORITY names unknown label %q", name)
				continue
			}
			if inChain[j] {
				c.errs.add(pr.poss[i], "PRIORITY names label %q twice", name)
				continue
			}
			inChain[j] = true
			chain = append(chain, j)
		}
		p.priorities = append(p.priorities, chain)
	}
}

func (c *compiler) compileRule(r ruleAST) *rulePlan {
	c.rules++
	if c.rules == c.lim.MaxRules+1 {
		c.errs.add(r.pos, "too many rules: the limit is %d", c.lim.MaxRules)
	}
	rp := &rulePlan{src: r.src}
	rp.root = c.compileExpr(r.e, rp, 1)
	return rp
}

func (c *compiler) compileExpr(e *expr, rp *rulePlan, depth int) *node {
	if depth > c.plan.depth {
		c.plan.depth = depth
	}
	switch e.kind {
	case exSignal:
		i := c.signal(e.sig)
		c.plan.signals[i].direct = true
		if e.sig.kind == SignalConcept {
			rp.lexical = true
		}
		return &node{kind: exSignal, sig: i}
	case exContext:
		l, r := c.signal(e.kids[0].sig), c.signal(e.kids[1].sig)
		if e.kids[0].sig.kind == SignalConcept || e.kids[1].sig.kind == SignalConcept {
			rp.lexical = true
		}
		if e.kids[0].sig.kind == SignalHash || e.kids[1].sig.kind == SignalHash {
			c.errs.add(e.pos, "HASH cannot take part in a context condition: it has no position in the text")
		}
		c.plan.contexts = append(c.plan.contexts, &contextPlan{left: l, right: r, op: e.op,
			src: c.plan.signals[l].source() + " [" + e.op + "] " + c.plan.signals[r].source()})
		return &node{kind: exContext, sig: len(c.plan.contexts) - 1}
	}
	n := &node{kind: e.kind}
	for _, k := range e.kids {
		n.kids = append(n.kids, c.compileExpr(k, rp, depth+1))
	}
	return n
}

func (c *compiler) signal(s *signalSpec) int {
	c.plan.written++
	if c.plan.written == c.lim.MaxSignals+1 {
		c.errs.add(s.pos, "too many signals: the limit is %d", c.lim.MaxSignals)
	}
	key := fmt.Sprintf("%s\x00%s\x00%d\x00%t", s.kind, s.text, s.maxDist, s.hasMax)
	if i, ok := c.sigIndex[key]; ok {
		return i
	}
	sp := &signalPlan{kind: s.kind, text: s.text}
	i := len(c.plan.signals)
	c.plan.signals = append(c.plan.signals, sp)
	c.sigIndex[key] = i
	switch s.kind {
	case SignalExact, SignalFuzzy:
		c.phrase(sp, int32(i), s)
	case SignalRegex:
		sp.re = c.regex(s)
	case SignalSentiment:
		v := strings.ToLower(strings.TrimSpace(s.text))
		switch v {
		case "negative", "positive", "neutral":
			sp.sentiment = v
		default:
			c.errs.add(s.pos, `SENTIMENT takes "negative", "positive" or "neutral", not %q`, s.text)
		}
	case SignalHash:
		c.hash(sp, s)
	case SignalConcept:
		sp.concept = c.plan.concepts.add(int32(i), s.text)
		if sp.concept == nil {
			c.errs.add(s.pos, "concept %s has no words", strconvQuote(s.text))
		}
	}
	return i
}

// regex compiles a REGEX signal, charging its program to the text's budget.
//
// Go's regexp has no DFA: beyond the small programs its backtracker takes, it
// simulates the NFA, and each byte of text steps every live thread, up to one per
// instruction. Matching is linear in the text but proportional to the program too:
// a 57 KiB alternation of words (58,000 instructions) took 92 s on a 256 KiB text.
// Measured at 2 to 12 ns per instruction and byte (large Unicode classes cost the
// most), the default of 500 instructions for all of a text's REGEX signals keeps the
// worst case near a second on the largest text a job takes (256 KiB), and a typical
// REGEX is 15 to 70 instructions. Identical signals are compiled and counted once.
func (c *compiler) regex(s *signalSpec) *regexp.Regexp {
	// regexp.Compile parses and compiles exactly like this, so the instruction count
	// is its program's; doing it first keeps a huge program from being built twice.
	parsed, err := syntax.Parse(s.text, syntax.Perl)
	if err != nil {
		c.errs.add(s.pos, "invalid REGEX: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		return nil
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		c.errs.add(s.pos, "invalid REGEX: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		return nil
	}
	n, limit := len(prog.Inst), c.lim.MaxRegexInsts
	if n > limit {
		c.errs.add(s.pos, "REGEX is too costly to match: it compiles to %d instructions, more than the limit of %d "+
			"(matching time grows with both the program and the text); write a list of words or phrases as "+
			`ANY(=("..."), =("...")) instead, which costs the same however long the list is`, n, limit)
		return nil
	}
	c.regexInsts += n
	if c.regexInsts > limit && !c.regexOver {
		c.regexOver = true
		c.errs.add(s.pos, "REGEX signals are too costly to match together: with this one they compile to %d "+
			"instructions, more than the limit of %d for all of a text's REGEX signals", c.regexInsts, limit)
	}
	re, err := regexp.Compile(s.text)
	if err != nil {
		c.errs.add(s.pos, "invalid REGEX: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		return nil
	}
	return re
}

var hashLens = map[string]int{"pdq": 32, "md5": 16, "sha1": 20}

func (c *compiler) hash(sp *signalPlan, s *signalSpec) {
	algo, hexs, ok := strings.Cut(strings.TrimSpace(s.text), ":")
	algo = strings.ToLower(algo)
	want, known := hashLens[algo]
	if !ok || !known {
		c.errs.add(s.pos, `HASH takes "pdq:<64 hex digits>", "md5:<32 hex digits>" or "sha1:<40 hex digits>", not %q`, s.text)
		return
	}
	b, err := hex.DecodeString(hexs)
	if err != nil || len(b) != want {
		c.errs.add(s.pos, "HASH %s value must be %d hex digits", algo, want*2)
		return
	}
	sp.hashAlgo, sp.hashRef = algo, b
	sp.maxDist = 31
	if s.hasMax {
		if algo != "pdq" {
			c.errs.add(s.pos, "a maximum distance applies only to pdq hashes; %s hashes match exactly", algo)
			return
		}
		sp.maxDist = s.maxDist
	}
}

// phrase registers an exact or fuzzy phrase with the automaton. A phrase is analysed
// exactly like content, so both sides agree on segmentation and normalisation.
func (c *compiler) phrase(sp *signalPlan, sig int32, s *signalSpec) {
	a := analyse(s.text, s.kind == SignalFuzzy)
	if len(a.units) == 0 {
		c.errs.add(s.pos, "phrase %s has no words to match", strconvQuote(s.text))
		return
	}
	if s.kind == SignalExact {
		ref := c.pattern(a.exactWords())
		ref.exact = append(ref.exact, sig)
		return
	}
	c.plan.fuzzy = true
	if len(a.ftoks) == 0 {
		c.errs.add(s.pos, "phrase %s has no words to match", strconvQuote(s.text))
		return
	}
	var norms []string
	words := a.fuzzyWords()
	variant := make([]string, len(words))
	for i, w := range words {
		variant[i] = w
		if w == sepWord {
			continue
		}
		variant[i] = fuzzyForm(strings.ReplaceAll(w, "l", "i"))
	}
	for _, t := range a.ftoks {
		norms = append(norms, t.spell)
		c.fwords = append(c.fwords, fuzzyWord{spell: t.spell, form: t.form})
		if letters(t.norm) >= minEditLetters {
			c.editForms = append(c.editForms, t.form)
		}
	}
	ref := c.pattern(words)
	ref.fuzzy = append(ref.fuzzy, fuzzyRef{sig: sig, norms: norms})
	// "ki11" decodes to "kiii": a second pattern with l read as i catches the digit 1
	// standing for l, which leetspeak uses as often as for i.
	if strings.Join(variant, " ") != strings.Join(words, " ") {
		ref := c.pattern(variant)
		ref.fuzzy = append(ref.fuzzy, fuzzyRef{sig: sig, norms: norms})
	}
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r > utf8.RuneSelf {
			n++
		}
	}
	return n
}

func (c *compiler) pattern(words []string) *patternRefs {
	key := strings.Join(words, "\x00")
	if i, ok := c.patIndex[key]; ok {
		return &c.plan.patterns[i]
	}
	c.patIndex[key] = len(c.patterns)
	c.patterns = append(c.patterns, words)
	c.plan.patterns = append(c.plan.patterns, patternRefs{})
	return &c.plan.patterns[len(c.plan.patterns)-1]
}

// buildAutomaton compiles every exact and fuzzy phrase of the plan into one
// Aho-Corasick DFA, so scanning costs one pass over the text however many phrases
// there are.
func (c *compiler) buildAutomaton() {
	keys := 0
	for _, f := range c.editForms {
		if n := utf8.RuneCountInString(f); n <= maxEditRunes {
			keys += n + 1
		}
	}
	c.plan.ed.dels = make(map[string][]int32, keys)
	for _, f := range c.editForms {
		c.plan.ed.addWord(f)
	}
	if len(c.patterns) == 0 {
		return
	}
	c.plan.ac = newWordAutomaton(c.patterns)
	c.plan.fv = newFuzzyVocab(c.plan.ac, c.fwords)
}
