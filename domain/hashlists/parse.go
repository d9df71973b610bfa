package hashlists

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// Import file formats (the API's HashListImportFormat).
const (
	FormatLines = "HASH_LIST_IMPORT_FORMAT_LINES"
	FormatHMA   = "HASH_LIST_IMPORT_FORMAT_HMA"
)

// Bounds of an import file and of one hash's provenance.
const (
	MaxLineBytes  = 4096
	MaxSourceLen  = 256
	MaxNoteLen    = 1024
	MaxImportRows = 1_000_000
)

// LineError is a bad line of an import file; nothing of the file is kept.
type LineError struct {
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// NewHash is one hash given to a list, before it is stored.
type NewHash struct {
	Hash, Source, Note string
}

// hexDigits is the length of a hash of kind k.
func hexDigits(k domain.HashKind) int {
	switch k {
	case domain.HashMD5:
		return 32
	case domain.HashSHA1:
		return 40
	case domain.HashPDQ:
		return 64
	}
	return 0
}

// NormalizeHash checks that s is a hash of kind k and returns it in
// lowercase hex.
func NormalizeHash(k domain.HashKind, s string) (string, error) {
	want := hexDigits(k)
	if len(s) != want {
		return "", fmt.Errorf("want a %s hash of %d hex digits, got %d characters", k, want, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", fmt.Errorf("a %s hash is hex digits only", k)
		}
	}
	return strings.ToLower(s), nil
}

func checkProvenance(source, note string) error {
	if len(source) > MaxSourceLen {
		return fmt.Errorf("source longer than %d bytes", MaxSourceLen)
	}
	if len(note) > MaxNoteLen {
		return fmt.Errorf("note longer than %d bytes", MaxNoteLen)
	}
	return nil
}

// ParseLines reads a file of one hash per line, optionally followed by
// `,source,note` (the note may itself hold commas). Blank lines and lines
// starting with '#' are skipped. The first bad line stops the parse with a
// *LineError; an error of fn is returned as is.
func ParseLines(r io.Reader, kind domain.HashKind, fn func(NewHash) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), MaxLineBytes)
	line, rows := 0, 0
	for sc.Scan() {
		line++
		text := sc.Bytes()
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		parts := strings.SplitN(string(text), ",", 3)
		h := NewHash{Hash: strings.TrimSpace(parts[0])}
		if len(parts) > 1 {
			h.Source = strings.TrimSpace(parts[1])
		}
		if len(parts) > 2 {
			h.Note = strings.TrimSpace(parts[2])
		}
		if err := addRow(&h, kind, &rows); err != nil {
			return &LineError{Line: line, Msg: err.Error()}
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{Line: line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
		}
		return err
	}
	return nil
}

func addRow(h *NewHash, kind domain.HashKind, rows *int) error {
	norm, err := NormalizeHash(kind, h.Hash)
	if err != nil {
		return err
	}
	h.Hash = norm
	if err := checkProvenance(h.Source, h.Note); err != nil {
		return err
	}
	*rows++
	if *rows > MaxImportRows {
		return fmt.Errorf("more than %d hashes in one file", MaxImportRows)
	}
	return nil
}

// exchangeSignalTypes maps the signal type names of python-threatexchange
// (the library hasher-matcher-actioner is built on) to our hash kinds.
// `photo_md5` is its older name for an image's MD5; `md5` and `sha1` are
// accepted for files written by hand.
var exchangeSignalTypes = map[string]domain.HashKind{
	"pdq": domain.HashPDQ, "video_md5": domain.HashMD5, "photo_md5": domain.HashMD5,
	"md5": domain.HashMD5, "sha1": domain.HashSHA1,
}

// ParseSignalCSV reads the signal CSV of python-threatexchange
// (`threatexchange dataset -P --csv`, the header
// `collab,signal_type,signal_str,category,tags`). The header must name
// `signal_type` and the value column (`signal_str`; `signal_value` and
// `signal` are accepted too); `collab` (or `bank_name`) becomes the source,
// and `category`, `tags` and `bank_content_id` the note. Rows of any other
// signal type than the list's kind (vPDQ, URLs, raw text...) are skipped and
// counted. An empty signal type, a bad hash or a malformed row stops the
// parse with a *LineError naming the line.
func ParseSignalCSV(r io.Reader, kind domain.HashKind, fn func(NewHash) error) (skipped int, err error) {
	ll := &lineLimiter{r: bufio.NewReader(r)}
	cr := csv.NewReader(ll)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return 0, &LineError{Line: 1, Msg: "empty file: want a header naming signal_type and signal_str"}
	}
	if err != nil {
		return 0, csvError(err, ll)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\xef\xbb\xbf")))
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	typeCol, ok := col["signal_type"]
	valueCol := firstColumn(col, "signal_str", "signal_value", "signal")
	if !ok || valueCol < 0 {
		return 0, &LineError{Line: 1, Msg: "the header must name signal_type and signal_str"}
	}
	sourceCol := firstColumn(col, "collab", "bank_name")
	noteCols := []struct {
		col    int
		prefix string
	}{{firstColumn(col, "category"), ""}, {firstColumn(col, "tags"), "tags: "}, {firstColumn(col, "bank_content_id"), ""}}
	field := func(rec []string, i int) string {
		if i >= 0 && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	rows := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return skipped, nil
		}
		if err != nil {
			return skipped, csvError(err, ll)
		}
		line, _ := cr.FieldPos(0) // only after a successful read: it panics otherwise
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if typeCol >= len(rec) || valueCol >= len(rec) {
			return skipped, &LineError{Line: line, Msg: fmt.Sprintf("want %d fields, got %d", max(typeCol, valueCol)+1, len(rec))}
		}
		st := strings.ToLower(strings.TrimSpace(rec[typeCol]))
		if st == "" {
			return skipped, &LineError{Line: line, Msg: "empty signal_type"}
		}
		if k, known := exchangeSignalTypes[st]; !known || k != kind {
			skipped++
			continue
		}
		var note []string
		for _, c := range noteCols {
			if v := field(rec, c.col); v != "" {
				note = append(note, c.prefix+v)
			}
		}
		h := NewHash{Hash: strings.TrimSpace(rec[valueCol]), Source: field(rec, sourceCol), Note: strings.Join(note, "; ")}
		if err := addRow(&h, kind, &rows); err != nil {
			return skipped, &LineError{Line: line, Msg: err.Error()}
		}
		if err := fn(h); err != nil {
			return skipped, err
		}
	}
}

// firstColumn is the index of the first of names the header has, or -1.
func firstColumn(col map[string]int, names ...string) int {
	for _, n := range names {
		if i, ok := col[n]; ok {
			return i
		}
	}
	return -1
}

func csvError(err error, ll *lineLimiter) error {
	if errors.Is(err, errLineTooLong) {
		return &LineError{Line: ll.line, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{Line: max(pe.StartLine, 1), Msg: pe.Err.Error()}
	}
	return err
}

var errLineTooLong = errors.New("line too long")

// lineLimiter fails a read once a line passes MaxLineBytes, so a file
// without newlines (or a quoted field that never ends) is not read whole.
type lineLimiter struct {
	r    *bufio.Reader
	cur  int
	line int // the line being read, from 1
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.line == 0 {
		l.line = 1
	}
	n, err := l.r.Read(p)
	for i := range n {
		if p[i] == '\n' {
			l.cur = 0
			l.line++
			continue
		}
		l.cur++
		if l.cur > MaxLineBytes {
			return i, errLineTooLong
		}
	}
	return n, err
}
