package rules

import (
	"strconv"
	"strings"
)

// SignalKind names the kinds of signal in the rule language.
type SignalKind string

// The signal kinds of RULES.md.
const (
	SignalConcept   SignalKind = "concept"
	SignalExact     SignalKind = "exact"
	SignalFuzzy     SignalKind = "fuzzy"
	SignalSentiment SignalKind = "sentiment"
	SignalRegex     SignalKind = "regex"
	SignalQuestion  SignalKind = "question"
	SignalHash      SignalKind = "hash"
	// SignalContext is not written by itself: it is an `a [OP] b` condition, named here
	// because a model backend receives it as one signal.
	SignalContext SignalKind = "context"
)

type exprKind int

const (
	exSignal exprKind = iota
	exContext
	exNot
	exAnd
	exOr
	exAny
	exAll
	exNone
)

type signalSpec struct {
	kind    SignalKind
	text    string
	pos     srcPos
	maxDist int
	hasMax  bool
}

type expr struct {
	kind exprKind
	pos  srcPos
	sig  *signalSpec
	op   string // canonical context operator
	kids []*expr
}

type ruleAST struct {
	e   *expr
	pos srcPos
	src string
}

type labelAST struct {
	name      string
	message   string
	pos       srcPos
	section   bool
	rules     []ruleAST
	excepts   []ruleAST
	hasExcept bool
}

type priorityAST struct {
	names []string
	poss  []srcPos
}

type docAST struct {
	labels     []*labelAST
	priorities []priorityAST
	excepts    []ruleAST
	hasExcept  bool
}

type parser struct {
	lx       *lexer
	errs     *errorList
	tok      token
	peeked   *token
	maxDepth int
	aborted  bool
	lastEnd  int
}

func newParser(src string, errs *errorList, maxDepth int) *parser {
	p := &parser{lx: newLexer(src, errs), errs: errs, maxDepth: maxDepth}
	p.tok = p.lx.next()
	return p
}

func (p *parser) next() {
	if p.peeked != nil {
		p.tok = *p.peeked
		p.peeked = nil
		return
	}
	p.tok = p.lx.next()
}

func (p *parser) peek() token {
	if p.peeked == nil {
		t := p.lx.next()
		p.peeked = &t
	}
	return *p.peeked
}

func (p *parser) isWord(kw string) bool {
	return p.tok.kind == tokWord && strings.EqualFold(p.tok.text, kw)
}

func (p *parser) skipNewlines() {
	for p.tok.kind == tokNewline {
		p.next()
	}
}

// syncLine skips to the end of the current line (or a closing brace) so that one bad
// rule produces one error instead of a cascade.
func (p *parser) syncLine() {
	for p.tok.kind != tokNewline && p.tok.kind != tokEOF && p.tok.kind != tokRBrace {
		p.next()
	}
}

func (p *parser) errorf(pos srcPos, format string, args ...any) {
	p.errs.add(pos, format, args...)
}

// unexpected reports the current token as an error: an invalid character with the
// lexer's message, anything else with the given one.
func (p *parser) unexpected(format string, args ...any) {
	if p.tok.kind == tokIllegal {
		p.errorf(p.tok.pos, "%s", p.tok.text)
		return
	}
	p.errorf(p.tok.pos, format, args...)
}

func (p *parser) expect(k tokenKind, context string) (token, bool) {
	if p.tok.kind != k {
		p.unexpected("expected %s %s, found %s", k, context, p.tok.describe())
		return p.tok, false
	}
	t := p.tok
	p.next()
	return t, true
}

// parseDocument parses a policy document. In label mode (a label version) the text is
// either a bare list of rules for the label named labelName, or exactly one block.
func (p *parser) parseDocument(labelName string) *docAST {
	doc := &docAST{}
	labelMode := labelName != ""
	var implicit *labelAST
	p.skipNewlines()
	if labelMode && !p.isWord("LABEL") && !p.isWord("SECTION") {
		implicit = &labelAST{name: labelName, pos: p.tok.pos}
		doc.labels = append(doc.labels, implicit)
	}
	for !p.aborted {
		p.skipNewlines()
		switch {
		case p.tok.kind == tokEOF:
			return doc
		case p.isWord("PRIORITY"):
			if labelMode {
				p.errorf(p.tok.pos, "PRIORITY belongs in a policy document, not in a label version")
			}
			if pr, ok := p.parsePriority(); ok && !labelMode {
				doc.priorities = append(doc.priorities, pr)
			}
		case p.isWord("LABEL") || p.isWord("SECTION"):
			if implicit != nil {
				p.errorf(p.tok.pos, "a label version is either a list of rules or exactly one LABEL/SECTION block, not both")
			} else if labelMode && len(doc.labels) == 1 {
				p.errorf(p.tok.pos, "a label version holds exactly one LABEL/SECTION block")
			}
			if l := p.parseLabel(); l != nil {
				doc.labels = append(doc.labels, l)
			}
		case p.isWord("EXCEPT") || p.isWord("UNLESS"):
			rules := p.parseExcept()
			if implicit != nil {
				implicit.excepts = append(implicit.excepts, rules...)
				implicit.hasExcept = true
			} else {
				doc.excepts = append(doc.excepts, rules...)
				doc.hasExcept = true
			}
		case p.tok.kind == tokRBrace:
			p.errorf(p.tok.pos, `unexpected "}" with no open block`)
			p.next()
		default:
			if implicit != nil {
				if r, ok := p.parseRuleLine(); ok {
					implicit.rules = append(implicit.rules, r)
				}
				continue
			}
			p.unexpected("expected LABEL, SECTION, PRIORITY or EXCEPT WHEN, found %s (rules belong inside a LABEL or SECTION block)", p.tok.describe())
			p.next()
			p.syncLine()
		}
	}
	return doc
}

func (p *parser) parsePriority() (priorityAST, bool) {
	start := p.tok.pos
	p.next()
	var pr priorityAST
	ok := true
	if _, good := p.expect(tokColon, "after PRIORITY"); !good {
		p.syncLine()
		return pr, false
	}
	for {
		t, good := p.expect(tokString, "(a label name) in PRIORITY")
		if !good {
			ok = false
			break
		}
		pr.names = append(pr.names, t.text)
		pr.poss = append(pr.poss, t.pos)
		if p.tok.kind != tokGT {
			break
		}
		p.next()
	}
	if ok && p.tok.kind != tokNewline && p.tok.kind != tokEOF {
		p.errorf(p.tok.pos, `expected ">" or end of line in PRIORITY, found %s`, p.tok.describe())
		ok = false
	}
	if ok && len(pr.names) < 2 {
		p.errorf(start, "a PRIORITY chain needs at least two labels")
		ok = false
	}
	p.syncLine()
	return pr, ok
}

func (p *parser) parseLabel() *labelAST {
	l := &labelAST{pos: p.tok.pos, section: p.isWord("SECTION")}
	kw := strings.ToUpper(p.tok.text)
	p.next()
	name, ok := p.expect(tokString, "(the label name) after "+kw)
	if !ok {
		p.skipBlock()
		return nil
	}
	l.name = name.text
	if strings.TrimSpace(l.name) == "" {
		p.errorf(name.pos, "label name is empty")
	}
	if p.tok.kind == tokColon {
		p.next()
		msg, ok := p.expect(tokString, "(the label message) after \":\"")
		if !ok {
			p.skipBlock()
			return nil
		}
		l.message = msg.text
	}
	p.skipNewlines()
	if _, ok := p.expect(tokLBrace, "to open the "+kw+" block"); !ok {
		p.skipBlock()
		return nil
	}
	attempted := 0 // rules tried, so a block whose only rule is broken is not also "empty"
	for !p.aborted {
		p.skipNewlines()
		switch {
		case p.tok.kind == tokRBrace:
			p.next()
			if attempted == 0 {
				p.errorf(l.pos, "%s %q has no rules", kw, l.name)
			}
			return l
		case p.tok.kind == tokEOF:
			p.errorf(l.pos, `%s %q is not closed: expected "}"`, kw, l.name)
			return l
		case p.isWord("EXCEPT") || p.isWord("UNLESS"):
			l.excepts = append(l.excepts, p.parseExcept()...)
			l.hasExcept = true
		case p.isWord("LABEL") || p.isWord("SECTION") || p.isWord("PRIORITY"):
			p.errorf(l.pos, `%s %q is not closed: expected "}" before %s`, kw, l.name, p.tok.describe())
			return l
		default:
			attempted++
			if r, ok := p.parseRuleLine(); ok {
				l.rules = append(l.rules, r)
			}
		}
	}
	return l
}

// skipBlock recovers from a broken block header by skipping to its closing brace.
func (p *parser) skipBlock() {
	for p.tok.kind != tokEOF && p.tok.kind != tokLBrace && p.tok.kind != tokNewline {
		p.next()
	}
	if p.tok.kind != tokLBrace {
		return
	}
	for p.tok.kind != tokEOF && p.tok.kind != tokRBrace {
		p.next()
	}
	p.next()
}

func (p *parser) parseExcept() []ruleAST {
	start := p.tok.pos
	if p.isWord("EXCEPT") {
		p.next()
		if !p.isWord("WHEN") {
			p.errorf(p.tok.pos, "expected WHEN after EXCEPT, found %s", p.tok.describe())
		} else {
			p.next()
		}
	} else {
		p.next() // UNLESS
	}
	p.skipNewlines()
	if _, ok := p.expect(tokLBrace, "to open the exception block"); !ok {
		p.syncLine()
		return nil
	}
	var rules []ruleAST
	attempted := 0
	for !p.aborted {
		p.skipNewlines()
		switch {
		case p.tok.kind == tokRBrace:
			p.next()
			if attempted == 0 {
				p.errorf(start, "exception block has no rules")
			}
			return rules
		case p.tok.kind == tokEOF:
			p.errorf(start, `exception block is not closed: expected "}"`)
			return rules
		case p.isWord("EXCEPT") || p.isWord("UNLESS") || p.isWord("LABEL") || p.isWord("SECTION") || p.isWord("PRIORITY"):
			p.errorf(start, `exception block is not closed: expected "}" before %s`, p.tok.describe())
			return rules
		default:
			attempted++
			if r, ok := p.parseRuleLine(); ok {
				rules = append(rules, r)
			}
		}
	}
	return rules
}

func (p *parser) parseRuleLine() (ruleAST, bool) {
	start := p.tok.pos
	before := len(p.errs.errs)
	e := p.parseExpr(0)
	end := p.lastEnd
	ok := e != nil && len(p.errs.errs) == before
	if !p.aborted && p.tok.kind != tokNewline && p.tok.kind != tokEOF && p.tok.kind != tokRBrace && !p.isWord("EXCEPT") && !p.isWord("UNLESS") {
		if ok {
			p.errorf(p.tok.pos, "expected end of rule, found %s (one rule per line; join conditions with AND or OR)", p.tok.describe())
		}
		ok = false
		p.syncLine()
	}
	if !ok {
		return ruleAST{}, false
	}
	return ruleAST{e: e, pos: start, src: strings.TrimSpace(p.lx.src[start.Offset:end])}, true
}

// lastEnd is the end offset of the last token consumed by the expression parser; it
// delimits a rule's source text for its report message.
func (p *parser) consume() token {
	t := p.tok
	p.lastEnd = t.end
	p.next()
	return t
}

func (p *parser) checkDepth(depth int, pos srcPos) bool {
	if depth > p.maxDepth {
		p.errorf(pos, "rule nests too deeply (more than %d levels)", p.maxDepth)
		p.aborted = true
		return false
	}
	return true
}

// A line that ends in AND or OR continues on the next one: authors break long rules
// that way and there is no other reading of a dangling operator.
func (p *parser) skipContinuation() {
	for p.tok.kind == tokNewline {
		p.next()
	}
}

func (p *parser) parseExpr(depth int) *expr {
	if !p.checkDepth(depth, p.tok.pos) {
		return nil
	}
	left := p.parseTerm(depth)
	if left == nil {
		return nil
	}
	if !p.isWord("OR") {
		return left
	}
	n := &expr{kind: exOr, pos: left.pos, kids: []*expr{left}}
	for p.isWord("OR") {
		p.consume()
		p.skipContinuation()
		right := p.parseTerm(depth)
		if right == nil {
			return nil
		}
		n.kids = append(n.kids, right)
	}
	return n
}

func (p *parser) parseTerm(depth int) *expr {
	left := p.parseFactor(depth)
	if left == nil {
		return nil
	}
	if !p.isWord("AND") {
		return left
	}
	n := &expr{kind: exAnd, pos: left.pos, kids: []*expr{left}}
	for p.isWord("AND") {
		p.consume()
		p.skipContinuation()
		right := p.parseFactor(depth)
		if right == nil {
			return nil
		}
		n.kids = append(n.kids, right)
	}
	return n
}

func (p *parser) parseFactor(depth int) *expr {
	if p.isWord("NOT") {
		pos := p.consume().pos
		if !p.checkDepth(depth+1, pos) {
			return nil
		}
		inner := p.parseFactor(depth + 1)
		if inner == nil {
			return nil
		}
		return &expr{kind: exNot, pos: pos, kids: []*expr{inner}}
	}
	return p.parsePrimary(depth)
}

var listKinds = map[string]exprKind{"ANY": exAny, "ALL": exAll, "NONE": exNone}

func (p *parser) parsePrimary(depth int) *expr {
	switch {
	case p.tok.kind == tokLParen:
		p.consume()
		inner := p.parseExpr(depth + 1)
		if inner == nil {
			return nil
		}
		if _, ok := p.expectConsume(tokRParen, "to close \"(\""); !ok {
			return nil
		}
		return inner
	case p.tok.kind == tokWord && p.peek().kind == tokLParen:
		if k, ok := listKinds[strings.ToUpper(p.tok.text)]; ok {
			return p.parseList(k, depth)
		}
	}
	sig := p.parseSignal()
	if sig == nil {
		return nil
	}
	n := &expr{kind: exSignal, pos: sig.pos, sig: sig}
	if p.tok.kind != tokLBracket {
		return n
	}
	return p.parseContext(n)
}

func (p *parser) expectConsume(k tokenKind, context string) (token, bool) {
	if p.tok.kind != k {
		p.unexpected("expected %s %s, found %s", k, context, p.tok.describe())
		return p.tok, false
	}
	return p.consume(), true
}

func (p *parser) parseList(k exprKind, depth int) *expr {
	kwTok := p.consume()
	kw := strings.ToUpper(kwTok.text)
	p.consume() // "("
	n := &expr{kind: k, pos: kwTok.pos}
	if !p.checkDepth(depth+1, kwTok.pos) {
		return nil
	}
	for {
		if p.tok.kind == tokRParen {
			if len(n.kids) == 0 {
				p.errorf(p.tok.pos, "%s needs at least one operand", kw)
				return nil
			}
			p.consume()
			return n
		}
		operand := p.parseExpr(depth + 1)
		if operand == nil {
			return nil
		}
		n.kids = append(n.kids, operand)
		switch p.tok.kind {
		case tokComma:
			p.consume()
		case tokRParen:
		default:
			p.unexpected(`expected "," or ")" in %s(...), found %s`, kw, p.tok.describe())
			return nil
		}
	}
}

var signalKeywords = map[string]SignalKind{
	"SENTIMENT": SignalSentiment,
	"REGEX":     SignalRegex,
	"QUESTION":  SignalQuestion,
	"HASH":      SignalHash,
}

func (p *parser) parseSignal() *signalSpec {
	t := p.tok
	switch t.kind {
	case tokString:
		p.consume()
		if strings.TrimSpace(t.text) == "" {
			p.errorf(t.pos, "empty concept string")
			return nil
		}
		return &signalSpec{kind: SignalConcept, text: t.text, pos: t.pos}
	case tokEquals, tokTilde:
		kind, name := SignalExact, "="
		if t.kind == tokTilde {
			kind, name = SignalFuzzy, "~"
		}
		p.consume()
		return p.parseSignalArgs(kind, name, t.pos)
	case tokWord:
		kw := strings.ToUpper(t.text)
		if kind, ok := signalKeywords[kw]; ok {
			p.consume()
			return p.parseSignalArgs(kind, kw, t.pos)
		}
		switch kw {
		case "AND", "OR":
			p.errorf(t.pos, "expected a signal before %s, found %s", kw, t.describe())
		case "ANY", "ALL", "NONE":
			p.errorf(t.pos, `expected "(" after %s`, kw)
		case "EXCEPT", "UNLESS", "LABEL", "SECTION", "PRIORITY":
			p.errorf(t.pos, "%s cannot appear inside a rule", kw)
		default:
			p.errorf(t.pos, `expected a signal (a "concept", =("exact"), ~("fuzzy"), SENTIMENT, REGEX, QUESTION or HASH), found %s (concepts are quoted strings)`, t.describe())
		}
	case tokIllegal:
		p.unexpected("")
	default:
		p.errorf(t.pos, `expected a signal (a "concept", =("exact"), ~("fuzzy"), SENTIMENT, REGEX, QUESTION or HASH), found %s`, t.describe())
	}
	if t.kind != tokNewline && t.kind != tokEOF && t.kind != tokRBrace {
		p.consume()
	}
	return nil
}

func (p *parser) parseSignalArgs(kind SignalKind, name string, pos srcPos) *signalSpec {
	if _, ok := p.expectConsume(tokLParen, "after "+name); !ok {
		return nil
	}
	s, ok := p.expectConsume(tokString, "(a quoted string) in "+name+"(...)")
	if !ok {
		return nil
	}
	sig := &signalSpec{kind: kind, text: s.text, pos: pos}
	if kind == SignalHash && p.tok.kind == tokComma {
		p.consume()
		n, ok := p.expectConsume(tokInt, "(the maximum distance) in HASH(...)")
		if !ok {
			return nil
		}
		v, err := strconv.Atoi(n.text)
		if err != nil || v > 256 {
			p.errorf(n.pos, "HASH maximum distance %s is out of range 0..256", n.text)
			return nil
		}
		sig.maxDist, sig.hasMax = v, true
	}
	if _, ok := p.expectConsume(tokRParen, "to close "+name+"(...)"); !ok {
		return nil
	}
	if strings.TrimSpace(sig.text) == "" {
		p.errorf(s.pos, "empty string in %s(...)", name)
		return nil
	}
	return sig
}

func (p *parser) parseContext(left *expr) *expr {
	open := p.consume()
	var words []string
	for p.tok.kind == tokWord {
		words = append(words, p.consume().text)
	}
	if len(words) == 0 {
		p.unexpected("expected a context operator such as [ABOUT] or [AGAINST], found %s", p.tok.describe())
		return nil
	}
	if _, ok := p.expectConsume(tokRBracket, "to close the context operator"); !ok {
		return nil
	}
	written := strings.Join(words, " ")
	op, ok := lookupOperator(written)
	if !ok {
		p.errorf(open.pos, "unknown context operator [%s]; did you mean [%s]?", strings.ToUpper(written), closestOperator(written))
	}
	right := p.parseSignal()
	if right == nil {
		return nil
	}
	if p.tok.kind == tokLBracket {
		p.errorf(p.tok.pos, "context conditions cannot be chained; combine them with AND")
		return nil
	}
	if !ok {
		return nil
	}
	return &expr{kind: exContext, pos: left.pos, op: op, kids: []*expr{left, {kind: exSignal, pos: right.pos, sig: right}}}
}
