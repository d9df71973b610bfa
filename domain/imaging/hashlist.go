package imaging

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// Kind is the kind of hash a hash list holds (the kernel's, as hash lists
// are entities of it).
type Kind = domain.HashKind

// Hash-list kinds (`contenteval hashlists import --kind`).
const (
	KindMD5  = domain.HashMD5
	KindSHA1 = domain.HashSHA1
	KindPDQ  = domain.HashPDQ
)

// ParseKind parses "md5", "sha1" or "pdq" (case-insensitive).
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case KindMD5, KindSHA1, KindPDQ:
		return k, nil
	}
	return "", fmt.Errorf("unknown hash kind %q (want md5, sha1 or pdq)", s)
}

// hexLen is the number of hex digits of a hash of kind k.
func hexLen(k Kind) int {
	switch k {
	case KindMD5:
		return 32
	case KindSHA1:
		return 40
	case KindPDQ:
		return 64
	}
	return 0
}

// MaxHashListLine is the longest line ParseHashList accepts. Real lines are
// under 100 bytes; the cap keeps a file without newlines from being read
// into memory whole.
const MaxHashListLine = 4096

// HashEntry is one hash of a hash-list file.
type HashEntry struct {
	Line int    // 1-based line number in the file
	Hex  string // the hash in lowercase hex
	// PDQ and Quality are set for KindPDQ only. Quality is -1 when the line
	// gives none.
	PDQ     Hash
	Quality int
}

// ParseError is a syntax error in a hash-list file.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ParseHashList reads a hash-list file of the given kind and calls fn for
// each hash, in file order, without holding the file in memory. The format
// is one hex hash per line (md5: 32 digits, sha1: 40, pdq: 64), either case;
// a pdq hash may be followed by whitespace or a comma and its quality
// (0..100), the form ThreatExchange tools write. Blank lines and lines
// starting with '#' are skipped, as is anything after a '#' on a line.
//
// The first bad line stops the parse with a *ParseError naming it. An error
// returned by fn stops the parse and is returned as is.
func ParseHashList(r io.Reader, kind Kind, fn func(HashEntry) error) error {
	want := hexLen(kind)
	if want == 0 {
		return fmt.Errorf("unknown hash kind %q", kind)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), MaxHashListLine)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Bytes()
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf")) // UTF-8 BOM
		}
		if i := bytes.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		e, err := parseHashLine(string(text), kind, want)
		if err != nil {
			return &ParseError{Line: line, Msg: err.Error()}
		}
		e.Line = line
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &ParseError{Line: line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxHashListLine)}
		}
		return err
	}
	return nil
}

func parseHashLine(text string, kind Kind, want int) (HashEntry, error) {
	e := HashEntry{Quality: -1}
	hexPart, rest := text, ""
	if i := strings.IndexAny(text, " \t,;"); i >= 0 {
		hexPart, rest = text[:i], strings.TrimSpace(text[i+1:])
	}
	if len(hexPart) != want || !isHex(hexPart) {
		return e, fmt.Errorf("want a %s hash of %d hex digits, got %q", kind, want, clip(hexPart))
	}
	e.Hex = strings.ToLower(hexPart)
	if kind != KindPDQ {
		if rest != "" {
			return e, fmt.Errorf("unexpected text after the %s hash: %q", kind, clip(rest))
		}
		return e, nil
	}
	h, err := ParseHash(e.Hex)
	if err != nil {
		return e, err
	}
	e.PDQ = h
	if rest != "" {
		q, err := strconv.Atoi(rest)
		if err != nil || q < 0 || q > 100 {
			return e, fmt.Errorf("pdq quality must be an integer 0..100, got %q", clip(rest))
		}
		e.Quality = q
	}
	return e, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
