package rules

// The parser of one rule: boolean expressions, ANY/ALL/NONE lists, signals and
// context conditions.

import (
	"strconv"
	"strings"
)

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
