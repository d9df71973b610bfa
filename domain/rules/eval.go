package rules

// Evaluate and its state: the built-in scoring of phrases, REGEX, HASH,
// sentiment and proximity contexts. How scores become outcomes and a Report is
// in outcome.go.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// Content is one item to evaluate.
type Content struct {
	Text string
	// Image carries the hashes of an image or video frame; nil for text. An image with no
	// Text (no OCR) makes every text signal fail (-1) rather than silently score 0.
	Image *ImageFeatures
	// Modality is informational ("text", "image", "video", "audio") and is passed to a
	// model backend.
	Modality string
	// ImageBytes and ImageType are the encoded image or video frame and its
	// media type, for model backends that see images; nil for text.
	ImageBytes []byte
	ImageType  string
	// Transcript, set when Text is a transcript chunk, is the chunk's range of the
	// media timeline: the report's flagged spans carry it to say which text their
	// offsets count in.
	Transcript *TimeRange
}

// EvalOptions tune one evaluation.
type EvalOptions struct {
	Threshold     float64 // 0 means 0.5
	Expedited     bool
	GlobalContext string
	// Evaluator scores concept, question and context signals. Nil uses the built-in
	// evaluators only: lexical concepts, proximity contexts, and -1 for questions.
	Evaluator SignalEvaluator
	// CountTokens makes a built-in-only evaluation report the BPE token count of the text
	// as its input tokens. It is off by default because counting costs more than
	// evaluating.
	CountTokens bool
	// Account is whom the evaluation is for: a model backend keeps its cache
	// and shares its server per account. BypassCache asks it for fresh
	// answers.
	Account     string
	BypassCache bool
}

// DefaultThreshold applies when EvalOptions.Threshold is 0.
const DefaultThreshold = 0.5

// maxOccurrences bounds the positions kept per signal: enough to explain and to pair
// for context conditions, and bounded so a hostile text cannot make pairing quadratic
// in its size.
const maxOccurrences = 256

// proximityWords is how close, in words, two occurrences must be for a context
// condition when they are not in the same sentence.
const proximityWords = 12

type occurrence struct {
	u0, u1     int // unit range, inclusive
	start, end int // bytes
	score      float64
}

type sigResult struct {
	score float64
	occ   []occurrence
	// capped: the signal may have matched more often than occ keeps, so
	// the spans of a rule that uses it may be incomplete.
	capped bool
}

func (r *sigResult) add(o occurrence) {
	if o.score > r.score {
		r.score = o.score
	}
	if len(r.occ) < maxOccurrences {
		r.occ = append(r.occ, o)
	} else {
		r.capped = true
	}
}

type evalState struct {
	p       *Plan
	t       float64
	a       *analysis
	sig     []sigResult
	ctx     []sigResult
	lexical bool // concepts were scored by the built-in lexical matcher
	// With a model backend: which model signals were skipped, and how each
	// answered one was read (nil without a backend).
	work               *modelWork
	sigNotes, ctxNotes []string

	asBuf    []AssertionReport
	scoreBuf []float64
	sc       *scratch

	text       string     // the evaluated text, which flagged spans slice
	transcript *TimeRange // Content.Transcript
	spanBytes  int        // the text of the spans flagged so far
	// spansTruncated: a bound of spans.go left spans out of the report.
	spansTruncated bool
	matches        int // the Matches of the sections so far
}

// Evaluate scores content against the plan. It returns an error only for invalid
// options or a cancelled context; signals that cannot be evaluated score -1 and show
// as OUTCOME_FAILED in the report. The context is checked between the stages of the
// evaluation and between REGEX signals, so a deadline stops a long evaluation soon
// after it passes, with ctx.Err() and no report.
func (p *Plan) Evaluate(ctx context.Context, c Content, opts EvalOptions) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := opts.Threshold
	if t == 0 {
		t = DefaultThreshold
	}
	if math.IsNaN(t) || t < 0 || t > 1 {
		return nil, fmt.Errorf("rules: threshold %v is outside [0, 1]", opts.Threshold)
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.sig = resetResults(sc.sig, len(p.signals))
	sc.ctx = resetResults(sc.ctx, len(p.contexts))
	st := &evalState{p: p, t: t, sig: sc.sig, ctx: sc.ctx, sc: sc, scoreBuf: sc.scores[:0], text: c.Text, transcript: c.Transcript}
	hasText := c.Text != "" || c.Image == nil
	if hasText {
		st.a = analyseInto(sc, c.Text, p.fuzzy, p.ac, p.ed, p.fv)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	// Every signal starts failed (-1) except phrases on text, which start at 0 and
	// rise with matches; each evaluator below overwrites what it can score.
	for i := range st.sig {
		st.sig[i].score = -1
	}
	if hasText {
		for _, i := range p.byKind[SignalExact] {
			st.sig[i].score = 0
		}
		for _, i := range p.byKind[SignalFuzzy] {
			st.sig[i].score = 0
		}
		for _, i := range p.byKind[SignalRegex] {
			// One REGEX cannot be stopped once started; its cost is bounded at
			// compile time instead (compiler.regex).
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r := &st.sig[i]
			r.score = 0
			ms := p.signals[i].re.FindAllStringIndex(c.Text, maxOccurrences)
			r.capped = len(ms) == maxOccurrences
			for _, m := range ms {
				if m[1] == m[0] {
					continue // an empty match says nothing about the text
				}
				st.addRegexOcc(r, m)
			}
		}
	}
	for _, i := range p.byKind[SignalHash] {
		st.sig[i].score = hashScore(p.signals[i], c.Image)
	}
	if hasText {
		st.scanPhrases()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st.sentiment(c.Text)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	usage := TokenUsage{Multiplier: p.multiplier(opts.Expedited)}
	if opts.Evaluator != nil {
		in, err := st.askEvaluator(ctx, c, opts)
		if err != nil {
			return nil, err
		}
		usage.InputTokens = in
	} else {
		if hasText {
			res := p.concepts.evaluate(st.a)
			for sig, r := range res {
				st.sig[sig] = r
			}
			st.lexical = len(res) > 0
		}
		for i := range p.contexts {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			st.ctx[i] = st.proximity(p.contexts[i])
		}
		if opts.CountTokens {
			usage.InputTokens = int64(CountTokens(c.Text))
		}
	}
	usage.BilledTokens = int64(math.Ceil(float64(usage.InputTokens) * usage.Multiplier))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep := st.report()
	rep.TokenUsage = usage
	return rep, nil
}

// resetResults returns rs resized to n zeroed results, keeping occurrence buffers.
func resetResults(rs []sigResult, n int) []sigResult {
	if cap(rs) < n {
		rs = make([]sigResult, n)
	}
	rs = rs[:n]
	for i := range rs {
		rs[i] = sigResult{occ: rs[i].occ[:0]}
	}
	return rs
}

func (st *evalState) addRegexOcc(r *sigResult, m []int) {
	a := st.a
	o := occurrence{start: m[0], end: m[1], score: 1, u0: -1, u1: -1}
	if len(a.units) > 0 {
		o.u0 = a.unitAtByte(m[0])
		o.u1 = max(o.u0, a.unitAtByte(max(m[1]-1, m[0])))
	}
	r.add(o)
}

// scanPhrases runs the plan's single automaton over the exact and the fuzzy word
// sequences and turns matches into occurrences of their signals.
func (st *evalState) scanPhrases() {
	p, a := st.p, st.a
	if p.ac == nil {
		return
	}
	ids, pos := st.sc.ids[:0], st.sc.pos[:0] // word index -> unit (or token) index
	defer func() { st.sc.ids, st.sc.pos = ids, pos }()
	for i, u := range a.units {
		if u.clause {
			ids = p.ac.ids(ids, sepWord)
			pos = append(pos, int32(i))
		}
		if u.idKnown {
			ids = append(ids, u.id)
		} else {
			ids = p.ac.ids(ids, u.norm)
		}
		pos = append(pos, int32(i))
	}
	p.ac.scan(ids, func(id, s, e int) {
		refs := &p.patterns[id]
		if len(refs.exact) == 0 {
			return
		}
		u0, u1 := int(pos[s]), int(pos[e-1])
		o := occurrence{u0: u0, u1: u1, start: a.units[u0].start, end: a.units[u1].end, score: 1}
		for _, sig := range refs.exact {
			st.sig[sig].add(o)
		}
	})
	if !p.fuzzy {
		return
	}
	ids, pos = ids[:0], pos[:0]
	for i, t := range a.ftoks {
		if t.clause {
			ids = p.ac.ids(ids, sepWord)
			pos = append(pos, int32(i))
		}
		ids = append(ids, t.id)
		pos = append(pos, int32(i))
	}
	p.ac.scan(ids, func(id, s, e int) {
		refs := &p.patterns[id]
		if len(refs.fuzzy) == 0 {
			return
		}
		if st.saturated(refs.fuzzy) {
			for _, ref := range refs.fuzzy {
				st.sig[ref.sig].capped = true
			}
			return
		}
		t0, t1 := int(pos[s]), int(pos[e-1])
		score := 1.0
		for k := t0; k <= t1; k++ {
			if a.ftoks[k].approx {
				score = 0.8
			}
		}
		o := occurrence{u0: a.ftoks[t0].u0, u1: a.ftoks[t1].u1, start: a.ftoks[t0].start, end: a.ftoks[t1].end, score: score}
		for _, ref := range refs.fuzzy {
			if st.guard(ref, t0, t1) {
				st.sig[ref.sig].add(o)
			}
		}
	})
}

// saturated reports whether every signal of refs already keeps all the occurrences
// it may, at the top score, so another match cannot change them. Scoring a fuzzy
// match walks its words, so a long phrase that a text repeats would otherwise cost
// its length for each of thousands of matches: seconds for a 10,000-word phrase.
func (st *evalState) saturated(refs []fuzzyRef) bool {
	for _, ref := range refs {
		if r := &st.sig[ref.sig]; len(r.occ) < maxOccurrences || r.score < 1 {
			return false
		}
	}
	return true
}

// guard rejects a fuzzy match whose text word is a correctly spelled English word other
// than the phrase's own or one of its regular inflections: folding and collapsing make
// "looser" look like "loser" and "rapper" like "raper", and false positives are the
// costly failure.
func (st *evalState) guard(ref fuzzyRef, t0, t1 int) bool {
	if len(ref.norms) != t1-t0+1 {
		return true
	}
	for k := t0; k <= t1; k++ {
		t := &st.a.ftoks[k]
		base := ref.norms[k-t0]
		if t.spell != base && isDictWord(t.spell) && !(t.infl && isInflectionOf(t.spell, base)) {
			return false
		}
	}
	return true
}

func (st *evalState) sentiment(text string) {
	var spans [][2]int
	for _, i := range st.p.byKind[SignalSentiment] {
		s := st.p.signals[i]
		if spans == nil {
			spans = sentenceSpans(text)
		}
		r := &st.sig[i]
		r.score = 0
		scores := sentimentScores(text, spans, s.sentiment)
		for k, sc := range scores {
			if sc <= 0 {
				continue
			}
			// A sentence ends after its trailing spaces; its flagged span does not.
			end := spans[k][0] + len(strings.TrimRightFunc(text[spans[k][0]:spans[k][1]], unicode.IsSpace))
			o := occurrence{start: spans[k][0], end: max(end, spans[k][0]+1), score: sc, u0: -1, u1: -1}
			if len(st.a.units) > 0 {
				o.u0 = st.a.unitAtByte(spans[k][0])
				o.u1 = max(o.u0, st.a.unitAtByte(max(spans[k][1]-1, spans[k][0])))
				if st.a.units[o.u0].start >= spans[k][1] {
					o.u0, o.u1 = -1, -1 // a sentence with no words
				}
			}
			r.add(o)
		}
	}
}

// proximity is the built-in context condition: min(a, b) over occurrences of a and b
// in the same sentence or within proximityWords words of each other. The operator is
// not interpreted; only a model backend reads it.
func (st *evalState) proximity(c *contextPlan) sigResult {
	l, r := st.sig[c.left], st.sig[c.right]
	if l.score < 0 || r.score < 0 {
		// Three-valued like AND: a side that did not fail and is below threshold
		// decides; otherwise the condition failed.
		for _, x := range []sigResult{l, r} {
			if x.score >= 0 && x.score < st.t {
				return sigResult{score: x.score}
			}
		}
		return sigResult{score: -1}
	}
	var res sigResult
	if len(l.occ) == 0 || len(r.occ) == 0 {
		return res
	}
	sent := st.a.sentenceOf()
	for _, oa := range l.occ {
		for _, ob := range r.occ {
			if oa.u0 < 0 || ob.u0 < 0 {
				continue
			}
			near := sent[oa.u0] == sent[ob.u0]
			if !near {
				gap := max(oa.u0, ob.u0) - min(oa.u1, ob.u1)
				near = gap <= proximityWords
			}
			if !near {
				continue
			}
			res.add(occurrence{u0: min(oa.u0, ob.u0), u1: max(oa.u1, ob.u1), start: min(oa.start, ob.start), end: max(oa.end, ob.end), score: min(oa.score, ob.score)})
		}
	}
	// Pairs of the occurrences a side did not keep are missing too.
	res.capped = res.capped || l.capped || r.capped
	return res
}

var errBatchSize = errors.New("rules: evaluator returned a wrong number of scores")
