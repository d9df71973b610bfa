package batches

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
)

// InputLimits bound a batch input file (docs/api.md#limits).
type InputLimits struct {
	MaxItems     int // items per file (25,000)
	MaxTextBytes int // bytes of one text item (256 KiB)
	MaxLineBytes int // bytes of one JSON line (32 MiB)
}

func (l InputLimits) withDefaults() InputLimits {
	if l.MaxItems <= 0 {
		l.MaxItems = 25000
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = 256 << 10
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = 32 << 20
	}
	return l
}

// maxRefIDBytes bounds a ref_id; with MaxItems it bounds the memory the
// duplicate check needs, whatever the size of the file.
const maxRefIDBytes = 256

// maxReportedLines is how many bad lines an invalid-file message names.
const maxReportedLines = 5

// InputItem is one valid item of an input file.
type InputItem struct {
	Line    int // 1-based line of the file where the item starts
	RefID   string
	Content domain.ContentItem
	Summary domain.ContentSummary
}

// LineError is one problem of an input file.
type LineError struct {
	Line    int
	Message string
}

// InputError says why an input file is invalid, naming its first bad
// lines (at most five). Its message is safe to show to the client.
type InputError struct{ Lines []LineError }

func (e *InputError) Error() string {
	parts := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		if l.Line > 0 {
			parts[i] = fmt.Sprintf("line %d: %s", l.Line, l.Message)
		} else {
			parts[i] = l.Message
		}
	}
	return "invalid input file: " + strings.Join(parts, "; ")
}

// batchParser holds what every format checks: the item limit and unique
// ref ids.
type batchParser struct {
	lim   InputLimits
	emit  func(*InputItem) error
	seen  map[string]int // ref id -> line
	n     int
	bad   []LineError
	limit bool // the item limit was exceeded
}

func newBatchParser(lim InputLimits, emit func(*InputItem) error) *batchParser {
	return &batchParser{lim: lim.withDefaults(), emit: emit, seen: map[string]int{}}
}

// fail records a bad line and reports whether parsing should stop.
func (p *batchParser) fail(line int, format string, args ...any) bool {
	p.bad = append(p.bad, LineError{Line: line, Message: fmt.Sprintf(format, args...)})
	return len(p.bad) >= maxReportedLines
}

// item validates one parsed item and emits it when the file is valid so
// far. It reports whether parsing should stop.
func (p *batchParser) item(line int, refID string, c domain.ContentInput) (stop bool, err error) {
	switch {
	case refID == "":
		return p.fail(line, "ref_id is empty"), nil
	case len(refID) > maxRefIDBytes:
		return p.fail(line, "ref_id is longer than %d bytes", maxRefIDBytes), nil
	case strings.IndexByte(refID, 0) >= 0:
		return p.fail(line, "ref_id contains a NUL character"), nil
	case !utf8.ValidString(refID):
		return p.fail(line, "ref_id is not valid UTF-8"), nil
	}
	if field, reason := badContentText(c); reason != "" {
		return p.fail(line, "content.%s: %s", field, reason), nil
	}
	if first, dup := p.seen[refID]; dup {
		return p.fail(line, "duplicate ref_id %q (first on line %d)", refID, first), nil
	}
	if p.n >= p.lim.MaxItems {
		p.limit = true
		p.fail(line, "the file has more than %d items", p.lim.MaxItems)
		return true, nil
	}
	p.seen[strings.Clone(refID)] = line // not a slice of the whole record
	p.n++
	items, sums, verr := jobs.ValidateContent([]domain.ContentInput{c}, 1, p.lim.MaxTextBytes)
	if verr != nil {
		msg := domain.ErrorMessage(verr)
		msg = strings.TrimPrefix(msg, "invalid ")
		msg = strings.ReplaceAll(msg, "contentData[0]", "content")
		return p.fail(line, "%s", msg), nil
	}
	if len(p.bad) > 0 {
		return false, nil // the file is invalid: keep checking, emit nothing
	}
	return false, p.emit(&InputItem{Line: line, RefID: refID, Content: items[0], Summary: sums[0]})
}

// badContentText finds a string of c that PostgreSQL cannot store in a text
// column or that encoding would silently alter (docs/api.md#input-leniency: NUL or invalid
// UTF-8 is refused on every backend, as in request bodies): CSV fields are
// raw bytes, and a JSON line may carry \u0000. It returns the field (in the
// spelling of the API) and why, or "" for both.
func badContentText(c domain.ContentInput) (field, reason string) {
	for _, f := range []struct {
		name string
		v    *string
	}{{"text", c.Text}, {"imageUrl", c.ImageURL}, {"videoUrl", c.VideoURL}, {"audioUrl", c.AudioURL}, {"captions", c.Captions}} {
		if f.v != nil {
			if reason := badText(*f.v); reason != "" {
				return f.name, reason
			}
		}
	}
	// Sorted, so a file with several bad keys always names the same one.
	for _, k := range slices.Sorted(maps.Keys(c.Metadata)) {
		if reason := badText(k); reason != "" {
			return "metadata", "a key " + reason
		}
		if reason := badText(c.Metadata[k]); reason != "" {
			return "metadata." + k, reason
		}
	}
	return "", ""
}

// badText says why s cannot be stored as text, or "".
func badText(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	return ""
}

func (p *batchParser) finish() (int, error) {
	if len(p.bad) == 0 && p.n == 0 {
		p.bad = append(p.bad, LineError{Message: "the file has no items"})
	}
	if len(p.bad) > 0 {
		return 0, &InputError{Lines: p.bad}
	}
	return p.n, nil
}

// ParseInput reads an input file, CSV or JSON Lines (told apart by
// the first character that is not white space or a byte-order mark: '{'
// starts JSON Lines), validating every line, and calls emit with each valid
// item in order. Memory does not grow with the file: one line (one CSV
// record) is held at a time, plus the ref ids seen (bounded by the item
// limit). Once a line is bad nothing more is emitted, and emitted items must
// be discarded: the result is the item count, or a *InputError naming
// the first bad lines, or the error of r or emit.
func ParseInput(r io.Reader, lim InputLimits, emit func(*InputItem) error) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if len(b) < i {
			if err != nil && !errors.Is(err, io.EOF) {
				return 0, err
			}
			return newBatchParser(lim, emit).finish() // empty or blank: no items
		}
		c := b[i-1]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0xEF || c == 0xBB || c == 0xBF {
			if i >= 4096 {
				return ParseCSV(br, lim, emit)
			}
			continue
		}
		if c == '{' {
			return ParseJSONL(br, lim, emit)
		}
		return ParseCSV(br, lim, emit)
	}
}

// csvTypes maps the CSV type column to the content field it fills.
var csvTypes = map[string]func(c *domain.ContentInput, v string) error{
	"text":      func(c *domain.ContentInput, v string) error { c.Text = &v; return nil },
	"image_url": func(c *domain.ContentInput, v string) error { c.ImageURL = &v; return nil },
	"video_url": func(c *domain.ContentInput, v string) error { c.VideoURL = &v; return nil },
	"audio_url": func(c *domain.ContentInput, v string) error { c.AudioURL = &v; return nil },
	"image": func(c *domain.ContentInput, v string) error {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil {
			return errors.New("content of type image is not valid base64")
		}
		c.Image = &b
		return nil
	},
}

// ParseCSV parses CSV with the header ref_id,type,content (see
// ParseInput).
func ParseCSV(r io.Reader, lim InputLimits, emit func(*InputItem) error) (int, error) {
	p := newBatchParser(lim, emit)
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	switch {
	case errors.Is(err, io.EOF):
		return p.finish()
	case err != nil:
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			p.fail(pe.Line, "%s", csvMessage(pe))
			return p.finish()
		}
		return 0, err
	}
	want := []string{"ref_id", "type", "content"}
	ok := len(header) == 3
	for i := 0; ok && i < 3; i++ {
		h := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(header[i], "\uFEFF")))
		ok = h == want[i]
	}
	if !ok {
		p.fail(1, "the header must be ref_id,type,content")
		return p.finish()
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return 0, err
			}
			if p.fail(pe.StartLine, "%s", csvMessage(pe)) || !errors.Is(pe.Err, csv.ErrFieldCount) {
				break // after a quoting error the rest cannot be trusted
			}
			continue
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != 3 {
			if p.fail(line, "want 3 fields (ref_id,type,content), got %d", len(rec)) {
				break
			}
			continue
		}
		set, known := csvTypes[strings.ToLower(strings.TrimSpace(rec[1]))]
		if !known {
			if p.fail(line, "unknown type %q (want text, image_url, image, video_url or audio_url)", truncate(rec[1], 40)) {
				break
			}
			continue
		}
		var c domain.ContentInput
		if err := set(&c, rec[2]); err != nil {
			if p.fail(line, "%s", err.Error()) {
				break
			}
			continue
		}
		stop, err := p.item(line, strings.TrimSpace(rec[0]), c)
		if err != nil {
			return 0, err
		}
		if stop {
			break
		}
	}
	return p.finish()
}

func csvMessage(pe *csv.ParseError) string {
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		return "want 3 fields (ref_id,type,content)"
	case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
		return "malformed CSV quoting"
	}
	return "malformed CSV"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// jsonContent is the ContentData of a JSON line; camelCase and snake_case
// spellings are both accepted (docs/api.md#input-leniency), unknown fields ignored.
type jsonContent struct {
	Text          *string           `json:"text"`
	Image         *[]byte           `json:"image"`
	ImageURL      *string           `json:"imageUrl"`
	ImageURLSnake *string           `json:"image_url"`
	VideoURL      *string           `json:"videoUrl"`
	VideoURLSnake *string           `json:"video_url"`
	AudioURL      *string           `json:"audioUrl"`
	AudioURLSnake *string           `json:"audio_url"`
	Video         *[]byte           `json:"video"`
	Audio         *[]byte           `json:"audio"`
	Captions      *string           `json:"captions"`
	Metadata      map[string]string `json:"metadata"`
}

type jsonLine struct {
	RefID            *string      `json:"refId"`
	RefIDSnake       *string      `json:"ref_id"`
	ContentData      *jsonContent `json:"contentData"`
	ContentDataSnake *jsonContent `json:"content_data"`
}

func firstOf[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// ParseJSONL parses JSON Lines of {"refId", "contentData"} (see
// ParseInput). Blank lines are skipped.
func ParseJSONL(r io.Reader, lim InputLimits, emit func(*InputItem) error) (int, error) {
	p := newBatchParser(lim, emit)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for line := 1; ; line++ {
		b, tooLong, err := readLine(br, &buf, p.lim.MaxLineBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		eof := errors.Is(err, io.EOF)
		stop := false
		switch {
		case tooLong:
			stop = p.fail(line, "the line is longer than %d bytes", p.lim.MaxLineBytes)
		case len(bytes.TrimSpace(b)) == 0:
		default:
			stop, err = p.jsonItem(line, b)
			if err != nil {
				return 0, err
			}
		}
		if stop || eof {
			break
		}
	}
	return p.finish()
}

func (p *batchParser) jsonItem(line int, b []byte) (bool, error) {
	// encoding/json would turn invalid UTF-8 into U+FFFD without a word
	// (two different ref ids could then collide); request bodies with it
	// are refused too (docs/api.md#input-leniency).
	if !utf8.Valid(b) {
		return p.fail(line, "the line is not valid UTF-8"), nil
	}
	var l jsonLine
	if err := json.Unmarshal(b, &l); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return p.fail(line, "%s has the wrong type", te.Field), nil
		}
		return p.fail(line, "not a JSON object"), nil
	}
	ref := firstOf(l.RefID, l.RefIDSnake)
	cd := firstOf(l.ContentData, l.ContentDataSnake)
	if ref == nil {
		return p.fail(line, "refId is missing"), nil
	}
	if cd == nil {
		return p.fail(line, "contentData is missing"), nil
	}
	c := domain.ContentInput{
		Text: cd.Text, Image: cd.Image, Video: cd.Video, Audio: cd.Audio, Captions: cd.Captions, Metadata: cd.Metadata,
		ImageURL: firstOf(cd.ImageURL, cd.ImageURLSnake), VideoURL: firstOf(cd.VideoURL, cd.VideoURLSnake),
		AudioURL: firstOf(cd.AudioURL, cd.AudioURLSnake),
	}
	return p.item(line, *ref, c)
}

// readLine reads one line (without its end) into *buf, reusing it. A line
// longer than max is skipped to its end and reported as tooLong, so memory
// stays at max whatever the file holds.
func readLine(br *bufio.Reader, buf *[]byte, max int) (line []byte, tooLong bool, err error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(*buf)+len(chunk) > max+2 { // +2: the line end
				tooLong = true
				*buf = (*buf)[:0]
			} else {
				*buf = append(*buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		out := bytes.TrimRight(*buf, "\r\n")
		if err == nil || (errors.Is(err, io.EOF) && (len(chunk) > 0 || len(*buf) > 0 || tooLong)) {
			if errors.Is(err, io.EOF) {
				return out, tooLong, io.EOF
			}
			return out, tooLong, nil
		}
		return out, tooLong, err
	}
}
