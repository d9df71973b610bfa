package rules

import (
	"fmt"
	"math"
	"sync"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

var (
	encOnce sync.Once
	enc     *bpeCounter
	encErr  error
)

func encoder() (*bpeCounter, error) {
	encOnce.Do(func() {
		// The offline loader serves the o200k_base vocabulary embedded in its module, so
		// counting never touches the network.
		ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("o200k_base.tiktoken")
		if err != nil {
			encErr = err
			return
		}
		enc, encErr = newBPECounter(ranks, o200kPattern)
	})
	return enc, encErr
}

// CountTokens returns the number of o200k_base BPE tokens in s. Special-token text is
// counted as ordinary text, as a model would see user content. It costs roughly half a
// millisecond per KiB, so the evaluator does not call it per content item unless asked.
func CountTokens(s string) int {
	if s == "" {
		return 0
	}
	e, err := encoder()
	if err != nil {
		// The vocabulary is embedded; failing to load it is a build defect.
		panic("rules: o200k_base vocabulary: " + err.Error())
	}
	return e.count(s)
}

// TokenCounts are the token figures of a label or policy version.
type TokenCounts struct {
	DSLTokenCount        int // the rule text as written
	GlobalContextTokens  int // the global context sent as system prompt
	SignalTokens         int // every signal string, as written (duplicates counted)
	SignalSpecialTokens  int // the framing a model prompt adds around each signal
	ContentSpecialTokens int // the framing a model prompt adds around the content
}

// Stats describes a compiled plan for the LabelVersion/PolicyVersion fields.
type Stats struct {
	SignalCount       int // signals as written
	TotalSignalTokens int // SignalTokens + SignalSpecialTokens
	TokenCounts       TokenCounts
	// ComplexityScore = Σ weight(signal) + Σ over rules of (depth - 1) + 2 × contexts,
	// with weight 1 for exact, fuzzy, regex, sentiment and hash signals, 2 for concepts
	// and 3 for questions, counting distinct signals. It drives the billing multiplier.
	ComplexityScore float64
}

// signalFrame and contentFrame are the prompt framing a model backend wraps around each
// signal and around the content; counting them with the same tokenizer gives the
// special-token figures.
const (
	signalFrame  = `{"id":%d,"kind":"%s","signal":""},`
	contentFrame = `<content modality="text">` + "\n\n" + `</content>` + "\nAnswer with JSON only."
)

// Stats returns the plan's counts. Token counts are computed on first call and cached,
// because BPE counting costs more than compiling.
func (p *Plan) Stats() Stats {
	p.statsOnce.Do(func() {
		var s Stats
		s.SignalCount = p.written
		s.TokenCounts.DSLTokenCount = CountTokens(p.source)
		p.walkWritten(func(sp *signalPlan, id int) {
			s.TokenCounts.SignalTokens += CountTokens(sp.text)
			s.TokenCounts.SignalSpecialTokens += CountTokens(fmt.Sprintf(signalFrame, id, sp.kind))
		})
		s.TokenCounts.ContentSpecialTokens = CountTokens(contentFrame)
		s.TotalSignalTokens = s.TokenCounts.SignalTokens + s.TokenCounts.SignalSpecialTokens
		s.ComplexityScore = p.complexityScore
		p.stats = s
	})
	return p.stats
}

// StatsWithGlobalContext is Stats with the token count of a global context filled in.
func (p *Plan) StatsWithGlobalContext(globalContext string) Stats {
	s := p.Stats()
	s.TokenCounts.GlobalContextTokens = CountTokens(globalContext)
	return s
}

// walkWritten visits every signal occurrence as written, in document order.
func (p *Plan) walkWritten(f func(sp *signalPlan, id int)) {
	id := 0
	var walk func(n *node)
	walk = func(n *node) {
		switch n.kind {
		case exSignal:
			f(p.signals[n.sig], id)
			id++
		case exContext:
			c := p.contexts[n.sig]
			f(p.signals[c.left], id)
			f(p.signals[c.right], id+1)
			id += 2
		default:
			for _, k := range n.kids {
				walk(k)
			}
		}
	}
	for _, l := range p.labels {
		for _, r := range l.rules {
			walk(r.root)
		}
		for _, r := range l.except {
			walk(r.root)
		}
	}
	for _, r := range p.docExcept {
		walk(r.root)
	}
}

func (p *Plan) complexity() float64 {
	score := 0.0
	for _, s := range p.signals {
		switch s.kind {
		case SignalConcept:
			score += 2
		case SignalQuestion:
			score += 3
		default:
			score++
		}
	}
	score += 2 * float64(len(p.contexts))
	var depth func(n *node) int
	depth = func(n *node) int {
		d := 0
		for _, k := range n.kids {
			d = max(d, depth(k))
		}
		return d + 1
	}
	each := func(rs []*rulePlan) {
		for _, r := range rs {
			score += float64(depth(r.root) - 1)
		}
	}
	for _, l := range p.labels {
		each(l.rules)
		each(l.except)
	}
	each(p.docExcept)
	return score
}

// multiplier is the billing multiplier: 1 for a trivial plan, growing with the
// logarithm of the complexity score (1 + log10(1 + score)/2, so a score of 99 gives 2),
// and 1.5 times that for expedited processing. It is rounded to 3 decimals so reports
// are stable.
func (p *Plan) multiplier(expedited bool) float64 {
	m := 1 + math.Log10(1+p.complexityScore)/2
	if expedited {
		m *= 1.5
	}
	return math.Round(m*1000) / 1000
}
