package rules

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenKind classifies lexer output. Keywords are not separate kinds: they are words
// compared case-insensitively by the parser, because context operators such as
// [USED WITH] are also plain words and must not be reserved.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokNewline
	tokWord
	tokString
	tokInt
	tokColon
	tokGT
	tokLBrace
	tokRBrace
	tokLParen
	tokRParen
	tokLBracket
	tokRBracket
	tokComma
	tokEquals
	tokTilde
	tokIllegal
)

var tokenNames = [...]string{
	tokEOF:      "end of text",
	tokNewline:  "end of line",
	tokWord:     "word",
	tokString:   "string",
	tokInt:      "number",
	tokColon:    `":"`,
	tokGT:       `">"`,
	tokLBrace:   `"{"`,
	tokRBrace:   `"}"`,
	tokLParen:   `"("`,
	tokRParen:   `")"`,
	tokLBracket: `"["`,
	tokRBracket: `"]"`,
	tokComma:    `","`,
	tokEquals:   `"="`,
	tokTilde:    `"~"`,
	tokIllegal:  "invalid character",
}

func (k tokenKind) String() string { return tokenNames[k] }

// srcPos is a position in rule text. Line and Column are 1-based; Column counts Unicode
// characters, not bytes, so that editors and error messages agree on non-ASCII text.
type srcPos struct {
	Offset int
	Line   int
	Column int
}

type token struct {
	kind tokenKind
	pos  srcPos
	end  int    // byte offset just past the token
	text string // word text, decoded string value, or for tokIllegal the error message
}

// describe renders a token for "expected X, found Y" messages.
func (t token) describe() string {
	switch t.kind {
	case tokWord:
		return fmt.Sprintf("%q", t.text)
	case tokString:
		return "string " + strconvQuote(t.text)
	case tokInt:
		return "number " + t.text
	case tokIllegal:
		return t.text
	}
	return t.kind.String()
}

func strconvQuote(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		r := []rune(s)
		s = string(r[:40]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// lexer turns rule text into tokens. Newlines are significant (one rule per line) only
// outside parentheses and brackets, so the lexer tracks nesting itself and the parser
// never has to decide whether a newline ends a rule.
type lexer struct {
	src    string
	off    int
	line   int
	col    int
	nest   int
	errors *errorList
}

func newLexer(src string, errs *errorList) *lexer {
	return &lexer{src: src, line: 1, col: 1, errors: errs}
}

func (l *lexer) pos() srcPos { return srcPos{Offset: l.off, Line: l.line, Column: l.col} }

func (l *lexer) peekRune() (rune, int) {
	if l.off >= len(l.src) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(l.src[l.off:])
}

func (l *lexer) advance() rune {
	r, n := l.peekRune()
	if n == 0 {
		return -1
	}
	l.off += n
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
	return r
}

func isWordStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isWordPart(r rune) bool {
	return r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// next returns the next token. It never fails: problems are recorded in the error list
// and reported as tokIllegal so the parser can resynchronise.
func (l *lexer) next() token {
	for {
		r, _ := l.peekRune()
		switch {
		case r == '\n':
			p := l.pos()
			l.advance()
			if l.nest > 0 {
				continue
			}
			return token{kind: tokNewline, pos: p, end: l.off}
		case r == '/' && strings.HasPrefix(l.src[l.off:], "//"):
			for r, _ := l.peekRune(); r != '\n' && r != -1; r, _ = l.peekRune() {
				l.advance()
			}
			continue
		case r == '\r' || r == '\t' || r == '\ufeff' || (r != -1 && unicode.IsSpace(r)):
			l.advance()
			continue
		}
		break
	}
	p := l.pos()
	r := l.advance()
	mk := func(k tokenKind) token { return token{kind: k, pos: p, end: l.off} }
	switch r {
	case -1:
		return mk(tokEOF)
	case ':':
		return mk(tokColon)
	case '>':
		return mk(tokGT)
	case '{':
		return mk(tokLBrace)
	case '}':
		return mk(tokRBrace)
	case '(':
		l.nest++
		return mk(tokLParen)
	case ')':
		if l.nest > 0 {
			l.nest--
		}
		return mk(tokRParen)
	case '[':
		l.nest++
		return mk(tokLBracket)
	case ']':
		if l.nest > 0 {
			l.nest--
		}
		return mk(tokRBracket)
	case ',':
		return mk(tokComma)
	case '=':
		return mk(tokEquals)
	case '~':
		return mk(tokTilde)
	case '"', '\u201c', '\u201d', '\u201e':
		return l.lexString(p)
	}
	if r >= '0' && r <= '9' {
		for r, _ := l.peekRune(); r >= '0' && r <= '9'; r, _ = l.peekRune() {
			l.advance()
		}
		t := mk(tokInt)
		t.text = l.src[p.Offset:l.off]
		return t
	}
	if isWordStart(r) {
		for r, _ := l.peekRune(); r != -1 && isWordPart(r); r, _ = l.peekRune() {
			l.advance()
		}
		t := mk(tokWord)
		t.text = l.src[p.Offset:l.off]
		return t
	}
	t := mk(tokIllegal)
	t.text = string(r)
	hint := ""
	switch r {
	case '\'', '\u2018', '\u2019':
		hint = ` (strings use double quotes)`
	case '&':
		hint = ` (use AND)`
	case '|':
		hint = ` (use OR)`
	case '!':
		hint = ` (use NOT)`
	}
	// Reported by the parser when it meets the token, so that a line with several
	// stray characters gives one error, like any other broken rule.
	t.text = fmt.Sprintf("unexpected character %q%s", r, hint)
	return t
}

// lexString reads a string opened at p. Straight and curly quotes are interchangeable
// because text pasted from word processors arrives curly. Only \" and \\ are escapes;
// any other backslash is kept, so REGEX("\bword\b") means what its author wrote.
func (l *lexer) lexString(p srcPos) token {
	var b strings.Builder
	for {
		r, _ := l.peekRune()
		switch r {
		case -1, '\n':
			l.errors.add(p, "unterminated string")
			return token{kind: tokString, pos: p, end: l.off, text: b.String()}
		case '"', '\u201c', '\u201d', '\u201e':
			l.advance()
			return token{kind: tokString, pos: p, end: l.off, text: b.String()}
		case '\\':
			l.advance()
			n, _ := l.peekRune()
			switch n {
			case '"', '\\', '\u201c', '\u201d':
				l.advance()
				b.WriteRune(n)
			default:
				b.WriteByte('\\')
			}
		default:
			l.advance()
			b.WriteRune(r)
		}
	}
}
