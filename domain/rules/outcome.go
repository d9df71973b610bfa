package rules

// From signal scores to outcomes: the three-valued AND and OR over rule trees,
// exceptions, PRIORITY, and the Report with its matched spans.

import (
	"math"
	"slices"
	"sort"
)

// orScore combines a list of scores with OR; see combiner.
func orScore(vals []float64, t float64) float64 {
	var c combiner
	for _, v := range vals {
		c.add(v)
	}
	return c.or(t)
}

func (st *evalState) eval(n *node) float64 {
	switch n.kind {
	case exSignal:
		return st.sig[n.sig].score
	case exContext:
		return st.ctx[n.sig].score
	case exNot:
		v := st.eval(n.kids[0])
		if v < 0 {
			return -1
		}
		return 1 - v
	}
	var acc combiner
	for _, k := range n.kids {
		acc.add(st.eval(k))
	}
	switch n.kind {
	case exAnd, exAll:
		return acc.and(st.t)
	case exNone:
		v := acc.or(st.t)
		if v < 0 {
			return -1
		}
		return 1 - v
	}
	return acc.or(st.t)
}

// combiner accumulates operands for the three-valued AND and OR without a slice.
type combiner struct {
	hi, lo float64 // max and min over operands that did not fail
	n      int     // operands that did not fail
	failed bool
}

func (c *combiner) add(v float64) {
	if v < 0 {
		c.failed = true
		return
	}
	if c.n == 0 || v > c.hi {
		c.hi = v
	}
	if c.n == 0 || v < c.lo {
		c.lo = v
	}
	c.n++
}

// or: decided TRUE by any operand >= t (score = max), otherwise -1 if any operand
// failed, otherwise the max.
func (c *combiner) or(t float64) float64 {
	if c.n > 0 && (c.hi >= t || !c.failed) {
		return c.hi
	}
	if c.failed {
		return -1
	}
	return 0
}

// and: decided FALSE by any operand below t that did not fail (score = min),
// otherwise -1 if any failed, otherwise the min.
func (c *combiner) and(t float64) float64 {
	if c.n > 0 && (c.lo < t || !c.failed) {
		return c.lo
	}
	if c.failed {
		return -1
	}
	return 0
}

// spans collects the positions of the signals that made a rule fire. Signals under NOT
// or NONE are skipped: their absence, not their presence, made the rule fire.
func (st *evalState) spans(n *node, out []Span) []Span {
	switch n.kind {
	case exNot, exNone:
		return out
	case exSignal, exContext:
		r := st.sig
		if n.kind == exContext {
			r = st.ctx
		}
		for _, o := range r[n.sig].occ {
			if o.score >= st.t {
				out = append(out, Span{Start: o.start, End: o.end})
			}
		}
		return out
	}
	for _, k := range n.kids {
		out = st.spans(k, out)
	}
	return out
}

func (st *evalState) outcome(score float64) Outcome {
	switch {
	case score < 0:
		return OutcomeFailed
	case score >= st.t:
		return OutcomeTrue
	}
	return OutcomeFalse
}

// round6 keeps reports stable across platforms and readable.
func round6(v float64) float64 {
	if v < 0 {
		return -1
	}
	return math.Round(v*1e6) / 1e6
}

func (st *evalState) assertions(rules []*rulePlan, tmpl *[2][]AssertionReport) ([]AssertionReport, []float64) {
	// One backing array serves every section's assertions and scores: a policy with
	// a thousand rules would otherwise allocate per section.
	if cap(st.asBuf)-len(st.asBuf) < len(rules) {
		st.asBuf = make([]AssertionReport, 0, max(len(rules), st.p.ruleCount))
	}
	if cap(st.scoreBuf)-len(st.scoreBuf) < len(rules) {
		// Scores do not outlive the evaluation: their buffer is pooled.
		st.scoreBuf = make([]float64, 0, max(len(rules), st.p.ruleCount))
		st.sc.scores = st.scoreBuf
	}
	out := st.asBuf[len(st.asBuf) : len(st.asBuf)+len(rules) : len(st.asBuf)+len(rules)]
	st.asBuf = st.asBuf[:len(st.asBuf)+len(rules)]
	scores := st.scoreBuf[len(st.scoreBuf) : len(st.scoreBuf)+len(rules) : len(st.scoreBuf)+len(rules)]
	st.scoreBuf = st.scoreBuf[:len(st.scoreBuf)+len(rules)]
	lex := 0
	if st.lexical {
		lex = 1
	}
	copy(out, tmpl[lex])
	for i, r := range rules {
		s := round6(st.eval(r.root))
		if st.work != nil {
			s = st.modelAssertion(r, s, &out[i])
		}
		scores[i] = s
		out[i].Score = s
		if o := st.outcome(s); o != OutcomeFalse && out[i].Result != OutcomeUnspecified {
			out[i].Result = o
			if o == OutcomeTrue {
				st.flag(&out[i], r.root)
			}
		}
	}
	return out, scores
}

// skippedSuffix ends the message of a rule whose model signals were not
// asked for because its label was decided without them.
const skippedSuffix = " (skipped: label already decided)"

// modelAssertion adds what the model backend said about r to its report:
// the notes of its model signals and, when some were skipped, the skipped
// suffix. A skipped rule that the skipped signals could still have turned
// either way is neither TRUE nor FALSE nor FAILED: UNSPECIFIED with score
// 0, so it weighs nothing in its label's score. It returns the rule's score.
func (st *evalState) modelAssertion(r *rulePlan, score float64, a *AssertionReport) float64 {
	var notes []string
	st.ruleNotes(r.root, &notes)
	for _, n := range notes {
		a.Message += " (" + n + ")"
	}
	if !st.work.skippedIn(r.root) {
		return score
	}
	a.Message += skippedSuffix
	if !st.possible(r.root, st.work).decided() {
		a.Result = OutcomeUnspecified
		return 0
	}
	return score
}

// ruleNotes collects the distinct notes of n's model signals in rule order.
func (st *evalState) ruleNotes(n *node, out *[]string) {
	var note string
	switch n.kind {
	case exSignal:
		note = st.sigNotes[n.sig]
	case exContext:
		note = st.ctxNotes[n.sig]
	default:
		for _, k := range n.kids {
			st.ruleNotes(k, out)
		}
		return
	}
	if note == "" {
		return
	}
	for _, x := range *out {
		if x == note {
			return
		}
	}
	*out = append(*out, note)
}

func (st *evalState) exception(rules []*rulePlan, tmpl *[2][]AssertionReport) (*ExceptionReport, bool) {
	as, scores := st.assertions(rules, tmpl)
	s := orScore(scores, st.t)
	o := st.outcome(s)
	return &ExceptionReport{Result: o, Assertions: as, Review: ReviewResult{Outcome: o, Score: s}}, o == OutcomeTrue
}

func (st *evalState) report() *Report {
	p := st.p
	rep := &Report{Threshold: st.t, LabelMatches: map[string]float64{}}
	docFired := false
	if len(p.docExcept) > 0 {
		rep.Exception, docFired = st.exception(p.docExcept, &p.docTmpl)
	}
	rep.Sections = make([]SectionReport, len(p.labels))
	for i, l := range p.labels {
		sec := &rep.Sections[i]
		sec.Name, sec.Message = l.name, l.message
		var scores []float64
		sec.Assertions, scores = st.assertions(l.rules, &l.rulesTmpl)
		sec.Score = round6(orScore(scores, st.t))
		fired := false
		if len(l.except) > 0 {
			sec.Exception, fired = st.exception(l.except, &l.exceptTmpl)
		}
		if !fired && docFired && sec.Exception == nil {
			sec.Exception = rep.Exception
		}
		switch {
		case fired || docFired:
			sec.Result = OutcomeFalse
		default:
			sec.Result = st.outcome(sec.Score)
		}
		if sec.Result == OutcomeTrue {
			sec.Matches = st.sectionMatches(l.rules, scores)
		}
	}
	// PRIORITY: decided against the TRUE set before any demotion, so the order of the
	// chains does not matter.
	wasTrue := make([]bool, len(rep.Sections))
	for i := range rep.Sections {
		wasTrue[i] = rep.Sections[i].Result == OutcomeTrue
	}
	for _, chain := range p.priorities {
		winner := false
		for _, li := range chain {
			if !wasTrue[li] {
				continue
			}
			if winner {
				rep.Sections[li].Result = OutcomeFalse
				rep.Sections[li].Matches = nil
			}
			winner = true
		}
	}
	rep.Result = OutcomeFalse
	anyFailed := false
	for i := range rep.Sections {
		sec := &rep.Sections[i]
		sec.Review = ReviewResult{Outcome: sec.Result, Score: sec.Score}
		switch sec.Result {
		case OutcomeTrue:
			rep.Result = OutcomeTrue
			rep.LabelMatches[sec.Name] = sec.Score
		case OutcomeFailed:
			anyFailed = true
		}
	}
	if rep.Result != OutcomeTrue && anyFailed {
		rep.Result = OutcomeFailed
	}
	st.finishSpans()
	rep.SpansTruncated = st.spansTruncated
	return rep
}

// sectionMatches returns the Matches of a TRUE section: the spans of its
// rules that reached the threshold, de-duplicated, the earliest in the
// text, within the bounds of Matches. A rule's signals keep up to
// maxOccurrences positions each, so the spans are compacted as they come
// rather than gathered for every rule first: a section of a thousand rules
// would otherwise gather megabytes to keep a few dozen.
func (st *evalState) sectionMatches(rules []*rulePlan, scores []float64) []Span {
	room := min(MaxSpansPerHit, MaxSpansPerReport-st.matches)
	if room <= 0 {
		return nil
	}
	raw := st.sc.raw[:0]
	for k, r := range rules {
		if scores[k] < st.t {
			continue
		}
		raw = st.spans(r.root, raw)
		if len(raw) > 4*room {
			raw = dedupeSpans(raw)
			raw = raw[:min(len(raw), room)]
		}
	}
	st.sc.raw = raw
	raw = dedupeSpans(raw)
	if len(raw) == 0 {
		return nil
	}
	out := slices.Clone(raw[:min(len(raw), room)])
	st.matches += len(out)
	return out
}

func dedupeSpans(s []Span) []Span {
	if len(s) < 2 {
		return s
	}
	sort.Slice(s, func(i, j int) bool {
		if s[i].Start != s[j].Start {
			return s[i].Start < s[j].Start
		}
		return s[i].End < s[j].End
	})
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}
