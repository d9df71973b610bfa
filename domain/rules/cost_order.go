package rules

// Cost order (docs/operations.md#model-backends): once the built-in signals are scored, a model is
// asked only for the signals whose score can still change a label's result.
// A model call costs milliseconds to seconds and real money; an exact phrase
// that already made a label TRUE, or an exception that already fired, makes
// the label's other model signals pointless.

// outcomeSet is the set of outcomes an expression can still have while some
// of its signals are unknown.
type outcomeSet uint8

const (
	canTrue outcomeSet = 1 << iota
	canFalse
	canFail
	anyOutcome = canTrue | canFalse | canFail
)

// decided reports whether exactly one outcome remains.
func (s outcomeSet) decided() bool { return s != 0 && s&(s-1) == 0 }

func negate(s outcomeSet) outcomeSet {
	out := s & canFail
	if s&canTrue != 0 {
		out |= canFalse
	}
	if s&canFalse != 0 {
		out |= canTrue
	}
	return out
}

// modelWork is which model signals are unknown (pending) and, of those,
// which the model must still be asked for (needed); pending signals that are
// not needed are skipped.
type modelWork struct {
	pendingSig, pendingCtx []bool
	neededSig, neededCtx   []bool
	skipped                bool // some pending signal is not needed
}

// outcomeOf is the set holding only the outcome of a known score.
func (st *evalState) outcomeOf(score float64) outcomeSet {
	switch st.outcome(score) {
	case OutcomeFailed:
		return canFail
	case OutcomeTrue:
		return canTrue
	}
	return canFalse
}

// possible follows the three-valued AND and OR of the combiner over sets:
// AND can be TRUE when every operand can, FALSE when any operand can, and
// FAILED when every operand can avoid FALSE and one can fail; OR mirrors it.
func (st *evalState) possible(n *node, w *modelWork) outcomeSet {
	switch n.kind {
	case exSignal:
		if w.pendingSig[n.sig] {
			return anyOutcome
		}
		return st.outcomeOf(st.sig[n.sig].score)
	case exContext:
		if w.pendingCtx[n.sig] {
			return anyOutcome
		}
		return st.outcomeOf(st.ctx[n.sig].score)
	case exNot:
		return negate(st.possible(n.kids[0], w))
	}
	and := n.kind == exAnd || n.kind == exAll
	decisive, other := canTrue, canFalse // OR: one TRUE decides
	if and {
		decisive, other = canFalse, canTrue
	}
	anyDecisive, allOther, allAvoid, anyFail := false, true, true, false
	for _, k := range n.kids {
		s := st.possible(k, w)
		anyDecisive = anyDecisive || s&decisive != 0
		allOther = allOther && s&other != 0
		allAvoid = allAvoid && s&(other|canFail) != 0
		anyFail = anyFail || s&canFail != 0
	}
	var out outcomeSet
	if anyDecisive {
		out |= decisive
	}
	if allOther {
		out |= other
	}
	if allAvoid && anyFail {
		out |= canFail
	}
	if n.kind == exNone {
		return negate(out)
	}
	return out
}

// possibleAny is the OR of a rule list (a label's score, an exception's), 0
// for an empty list.
func (st *evalState) possibleAny(rules []*rulePlan, w *modelWork) outcomeSet {
	if len(rules) == 0 {
		return 0
	}
	return st.possible(&node{kind: exOr, kids: rootsOf(rules)}, w)
}

func rootsOf(rules []*rulePlan) []*node {
	out := make([]*node, len(rules))
	for i, r := range rules {
		out[i] = r.root
	}
	return out
}

// planModelWork marks the model signals that can still change a label's
// result. A label is decided when its possible results are one: an exception
// that must fire makes it FALSE, a rule that must be TRUE leaves only its
// exceptions to ask about.
func (st *evalState) planModelWork(w *modelWork) {
	p := st.p
	doc := st.possibleAny(p.docExcept, w)
	needDoc := false
	for _, l := range p.labels {
		ruleSet := st.possibleAny(l.rules, w)
		exc := st.possibleAny(l.except, w)
		mayFire := exc&canTrue != 0 || doc&canTrue != 0
		mayNotFire := (len(l.except) == 0 || exc&^canTrue != 0) && (len(p.docExcept) == 0 || doc&^canTrue != 0)
		var result outcomeSet
		if mayFire {
			result |= canFalse
		}
		if mayNotFire {
			result |= ruleSet
		}
		if result.decided() {
			continue
		}
		if ruleSet != canTrue || !mayFire {
			st.markNeeded(l.rules, w)
		}
		if mayFire {
			st.markNeeded(l.except, w)
			needDoc = true
		}
	}
	if needDoc {
		st.markNeeded(p.docExcept, w)
	}
	for i, pend := range w.pendingSig {
		w.skipped = w.skipped || (pend && !w.neededSig[i])
	}
	for i, pend := range w.pendingCtx {
		w.skipped = w.skipped || (pend && !w.neededCtx[i])
	}
}

func (st *evalState) markNeeded(rules []*rulePlan, w *modelWork) {
	for _, r := range rules {
		st.markNode(r.root, w)
	}
}

// markNode marks the pending signals of the undecided parts of n.
func (st *evalState) markNode(n *node, w *modelWork) {
	switch n.kind {
	case exSignal:
		if w.pendingSig[n.sig] {
			w.neededSig[n.sig] = true
		}
		return
	case exContext:
		if w.pendingCtx[n.sig] {
			w.neededCtx[n.sig] = true
		}
		return
	}
	if st.possible(n, w).decided() {
		return
	}
	for _, k := range n.kids {
		st.markNode(k, w)
	}
}

// skippedModelSignals reports whether n holds a model signal that was not
// asked for.
func (w *modelWork) skippedIn(n *node) bool {
	switch n.kind {
	case exSignal:
		return w.pendingSig[n.sig] && !w.neededSig[n.sig]
	case exContext:
		return w.pendingCtx[n.sig] && !w.neededCtx[n.sig]
	}
	for _, k := range n.kids {
		if w.skippedIn(k) {
			return true
		}
	}
	return false
}
