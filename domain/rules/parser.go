package rules

// The syntax tree, the parser's token handling and error recovery, and the
// document structure: LABEL/SECTION blocks, PRIORITY chains and exception
// blocks. Rules themselves are parsed in ruleparser.go.

import (
	"strings"
)

// SignalKind names the kinds of signal in the rule language.
type SignalKind string

// The signal kinds of docs/rules.md#signals.
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
