package handlers

import (
	"bytes"
	"unicode/utf8"
)

// maxJSONDepth is the deepest nesting of objects and arrays a body may have
// (docs/api.md#limits). The API's own schemas nest five deep at most.
const maxJSONDepth = 64

// pathStep is one step from the root to the value being scanned.
type pathStep struct {
	array bool
	index int    // arrays: the element being scanned
	key   []byte // objects: the member name as sent, escapes included
}

// jsonProblem is why scanJSON refused a body, and where.
type jsonProblem struct {
	// path leads to the offending value (to the object, for a member name).
	path   []pathStep
	reason string
	// syntax is set for malformed JSON; offset is the byte it was found at.
	syntax bool
	offset int
}

// Reasons of scanJSON's problems; also the descriptions of the field
// violations they become.
const (
	reasonNUL      = "contains a NUL character"
	reasonUTF8     = "is not valid UTF-8"
	reasonKeyNUL   = "has a member name that contains a NUL character"
	reasonKeyUTF8  = "has a member name that is not valid UTF-8"
	reasonTooDeep  = "nests objects and arrays more than 64 levels deep"
	reasonTooMany  = "is past the most values this operation accepts in one body"
	reasonMalform  = "malformed JSON"
	reasonTrailing = "malformed JSON: data after the top-level value"
)

// scanJSON checks a JSON body in one pass over its bytes, before anything
// decodes it: decoding into interface{} (the request validator, the alias
// rewriter) costs tens of bytes per value, so "[]," repeated ten million
// times in an ignored field turns 30 MiB into gigabytes. It refuses nesting
// deeper than maxJSONDepth, more than maxValues values (every member and
// element counts), and strings with NUL (as the escape \u0000; a raw control
// byte is malformed JSON) or invalid UTF-8, which encoding/json would turn
// into a NUL PostgreSQL cannot store, or silently into U+FFFD. Numbers and
// literals are only delimited, not parsed: the decoders that run next refuse
// a bad one before building anything. It allocates only to report a problem.
func scanJSON(b []byte, maxValues int) *jsonProblem {
	sc := jsonScanner{b: b}
	for {
		// A value starts here.
		if p := sc.value(maxValues); p != nil {
			return p
		}
		if sc.opened {
			continue
		}
		if done, p := sc.close(); done || p != nil {
			return p
		}
	}
}

// jsonScanner is the state of scanJSON: the path to the current value
// (stack[:depth]), the values counted, the offset i in b.
type jsonScanner struct {
	b                []byte
	stack            [maxJSONDepth]pathStep
	depth, values, i int
	// opened says that the last value opened a container whose first
	// value is next.
	opened bool
}

func (sc *jsonScanner) problem(reason string) *jsonProblem {
	return &jsonProblem{path: append([]pathStep(nil), sc.stack[:sc.depth]...), reason: reason, offset: sc.i}
}

func (sc *jsonScanner) malformed() *jsonProblem {
	p := sc.problem(reasonMalform)
	p.syntax = true
	return p
}

// key scans the member name at b[i] and the colon after it.
func (sc *jsonScanner) key() *jsonProblem {
	b := sc.b
	if sc.i = skipSpace(b, sc.i); sc.i >= len(b) || b[sc.i] != '"' {
		return sc.malformed()
	}
	start := sc.i + 1
	end, reason := scanString(b, sc.i)
	switch {
	case end < 0:
		return sc.malformed()
	case reason != "":
		// The path leads to the object: its current key is the last one.
		p := sc.problem(reasonKeyNUL)
		if reason == reasonUTF8 {
			p.reason = reasonKeyUTF8
		}
		p.path = p.path[:sc.depth-1]
		return p
	}
	sc.stack[sc.depth-1].key = b[start : end-1]
	if sc.i = skipSpace(b, end); sc.i >= len(b) || b[sc.i] != ':' {
		return sc.malformed()
	}
	sc.i++
	return nil
}

// value scans the value that starts at b[i]: a whole string or literal, an
// empty container, or the opening of a container and, in an object, its
// first key (then opened is set).
func (sc *jsonScanner) value(maxValues int) *jsonProblem {
	b := sc.b
	sc.opened = false
	if sc.i = skipSpace(b, sc.i); sc.i >= len(b) {
		return sc.malformed()
	}
	if sc.values++; sc.values > maxValues {
		return sc.problem(reasonTooMany)
	}
	switch c := b[sc.i]; c {
	case '{', '[':
		if sc.depth == maxJSONDepth {
			return sc.problem(reasonTooDeep)
		}
		sc.stack[sc.depth] = pathStep{array: c == '['}
		sc.depth++
		sc.i = skipSpace(b, sc.i+1)
		if sc.i < len(b) && (b[sc.i] == '}' && c == '{' || b[sc.i] == ']' && c == '[') {
			sc.depth--
			sc.i++
			return nil
		}
		sc.opened = true
		if c == '{' {
			return sc.key()
		}
	case '"':
		end, reason := scanString(b, sc.i)
		if end < 0 {
			return sc.malformed()
		}
		if reason != "" {
			return sc.problem(reason)
		}
		sc.i = end
	default:
		start := sc.i
		for sc.i < len(b) && isLiteralByte(b[sc.i]) {
			sc.i++
		}
		if sc.i == start {
			return sc.malformed()
		}
	}
	return nil
}

// close is what follows a value that ended: it closes the containers the
// value ends, then goes to the next element or member (done when the
// document ended).
func (sc *jsonScanner) close() (done bool, p *jsonProblem) {
	b := sc.b
	for {
		if sc.depth == 0 {
			if sc.i = skipSpace(b, sc.i); sc.i != len(b) {
				p := sc.problem(reasonTrailing)
				p.syntax = true
				return true, p
			}
			return true, nil
		}
		if sc.i = skipSpace(b, sc.i); sc.i >= len(b) {
			return true, sc.malformed()
		}
		top := &sc.stack[sc.depth-1]
		c := b[sc.i]
		if c == ']' && top.array || c == '}' && !top.array {
			sc.depth--
			sc.i++
			continue
		}
		if c != ',' {
			return true, sc.malformed()
		}
		sc.i++
		if top.array {
			top.index++
		} else if p := sc.key(); p != nil {
			return true, p
		}
		return false, nil
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// isLiteralByte reports the bytes numbers, true, false and null are made of
// (and a few more: the decoders refuse what is not JSON).
func isLiteralByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// scanString scans the string whose opening quote is b[i]. It returns the
// offset after the closing quote (-1 for malformed JSON) and, for text
// PostgreSQL cannot store, the reason. Runs of plain text are found with
// bytes.IndexByte and checked with utf8.Valid, both vectorised; the next
// quote and the next backslash are each searched for once per occurrence, so
// a string full of escapes stays linear.
func scanString(b []byte, i int) (int, string) {
	i++
	quote, slash := -1, -1 // absolute offsets of the next '"' and '\\' at or after i
	for {
		if quote < i {
			k := bytes.IndexByte(b[i:], '"')
			if k < 0 {
				return -1, ""
			}
			quote = i + k
		}
		if slash < i {
			slash = len(b) // none before quote
			if k := bytes.IndexByte(b[i:quote], '\\'); k >= 0 {
				slash = i + k
			}
		}
		if slash > quote {
			if !utf8.Valid(b[i:quote]) {
				return quote + 1, reasonUTF8
			}
			return quote + 1, ""
		}
		if !utf8.Valid(b[i:slash]) {
			return skipRest(b, slash), reasonUTF8
		}
		i = slash + 1
		if i >= len(b) {
			return -1, ""
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+5 > len(b) {
				return -1, ""
			}
			v, ok := hex4(b[i+1 : i+5])
			if !ok {
				return -1, ""
			}
			if v == 0 {
				return skipRest(b, i), reasonNUL
			}
			i += 5
		default:
			return -1, ""
		}
	}
}

// skipRest is the end of a string found bad at i, for the problem's offset;
// the scan stops there, so a malformed rest does not matter.
func skipRest(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
			continue
		case '"':
			return i + 1
		}
		i++
	}
	return len(b)
}

func hex4(h []byte) (rune, bool) {
	var v rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}
