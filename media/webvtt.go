package media

import (
	"errors"
	"fmt"
	"html"
	"sort"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// MaxCues bounds the cues of one captions file: four hours of captions at
// one cue a second is 14,400, so 100,000 only stops abuse.
const MaxCues = 100_000

// MaxCaptionsBytes bounds a captions file (a 4 h subtitle file is well under
// 2 MiB).
const MaxCaptionsBytes = 8 << 20

// VTTError is a malformed WebVTT file; Line is 1-based.
type VTTError struct {
	Line int
	Msg  string
}

func (e *VTTError) Error() string { return fmt.Sprintf("webvtt line %d: %s", e.Line, e.Msg) }

// ParseWebVTT parses WebVTT captions into transcript chunks, one per cue
// with text (docs/api.md#timed-media), in ascending start order. It follows the W3C WebVTT
// file structure: the "WEBVTT" signature (after an optional BOM), a header
// block, then blocks separated by blank lines; NOTE, STYLE and REGION blocks
// are skipped; a cue is an optional identifier, a timing line
// "[hh:]mm:ss.ttt --> [hh:]mm:ss.ttt [settings]" and its payload. The payload
// keeps its line breaks, loses its markup (<b>, <v Speaker>, timestamps) and
// has its character references decoded, because text signals must see the
// words a viewer reads.
//
// Unlike a browser, which skips a cue it cannot parse, a malformed file is
// an error (*VTTError): captions are the transcript of record for the
// evaluation, and silently dropping a cue would silently drop its text from
// moderation.
func ParseWebVTT(s string) ([]domain.TranscriptChunk, error) {
	if len(s) > MaxCaptionsBytes {
		return nil, &VTTError{Line: 1, Msg: fmt.Sprintf("captions are larger than %d bytes", MaxCaptionsBytes)}
	}
	s = strings.TrimPrefix(s, "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(lines[0], "WEBVTT") || (len(lines[0]) > 6 && lines[0][6] != ' ' && lines[0][6] != '\t') {
		return nil, &VTTError{Line: 1, Msg: `the file does not start with "WEBVTT"`}
	}
	i := 1
	// The header runs to the first blank line. A timing line there means
	// the blank line was forgotten; say so rather than lose the cue.
	for ; i < len(lines) && lines[i] != ""; i++ {
		if strings.Contains(lines[i], "-->") {
			return nil, &VTTError{Line: i + 1, Msg: "a cue must be separated from the header by a blank line"}
		}
	}
	var chunks []domain.TranscriptChunk
	for i < len(lines) {
		if lines[i] == "" {
			i++
			continue
		}
		start := i
		for i < len(lines) && lines[i] != "" {
			i++
		}
		block := lines[start:i]
		first := block[0]
		if !strings.Contains(first, "-->") && (isKeywordLine(first, "NOTE") || isKeywordLine(first, "STYLE") || isKeywordLine(first, "REGION")) {
			continue
		}
		timing := 0
		if !strings.Contains(first, "-->") {
			timing = 1 // the first line is the cue identifier
		}
		if timing >= len(block) || !strings.Contains(block[timing], "-->") {
			return nil, &VTTError{Line: start + 1, Msg: "a block is neither a cue nor a NOTE, STYLE or REGION block"}
		}
		startMs, endMs, err := parseTiming(block[timing])
		if err != nil {
			return nil, &VTTError{Line: start + timing + 1, Msg: err.Error()}
		}
		payload := block[timing+1:]
		for k, l := range payload {
			if strings.Contains(l, "-->") {
				return nil, &VTTError{Line: start + timing + 2 + k, Msg: `"-->" inside a cue payload; is a blank line missing?`}
			}
		}
		text := cueText(strings.Join(payload, "\n"))
		if strings.TrimSpace(text) == "" {
			continue
		}
		if len(chunks) == MaxCues {
			return nil, &VTTError{Line: start + 1, Msg: fmt.Sprintf("more than %d cues", MaxCues)}
		}
		chunks = append(chunks, domain.TranscriptChunk{StartMs: startMs, EndMs: endMs, Text: text})
	}
	// Cues must be in start order; files written by hand are not always,
	// and hits must come out in ascending start.
	sort.SliceStable(chunks, func(a, b int) bool { return chunks[a].StartMs < chunks[b].StartMs })
	return chunks, nil
}

func isKeywordLine(l, kw string) bool {
	return l == kw || strings.HasPrefix(l, kw+" ") || strings.HasPrefix(l, kw+"\t")
}

// parseTiming parses "start --> end [settings]".
func parseTiming(l string) (int64, int64, error) {
	left, right, _ := strings.Cut(l, "-->")
	left = strings.TrimRight(left, " \t")
	right = strings.TrimLeft(right, " \t")
	if end := strings.IndexAny(right, " \t"); end >= 0 {
		right = right[:end] // the cue settings follow; they do not concern us
	}
	s, err := parseTimestamp(left)
	if err != nil {
		return 0, 0, fmt.Errorf("cue start: %w", err)
	}
	e, err := parseTimestamp(right)
	if err != nil {
		return 0, 0, fmt.Errorf("cue end: %w", err)
	}
	if e < s {
		return 0, 0, errors.New("the cue ends before it starts")
	}
	return s, e, nil
}

// maxHours keeps timestamps far from int64 overflow; no media is 1000 h.
const maxHours = 999

// parseTimestamp parses "[hh:]mm:ss.ttt" (hours may have more than two
// digits) into milliseconds.
func parseTimestamp(t string) (int64, error) {
	bad := fmt.Errorf("%q is not a timestamp ([hh:]mm:ss.ttt)", truncate(t, 32))
	parts := strings.Split(t, ":")
	if len(parts) != 2 && len(parts) != 3 {
		return 0, bad
	}
	var h int64
	if len(parts) == 3 {
		if len(parts[0]) < 2 || len(parts[0]) > 3 {
			return 0, bad
		}
		v, ok := digits(parts[0])
		if !ok || v > maxHours {
			return 0, bad
		}
		h = v
		parts = parts[1:]
	}
	secs, frac, ok := strings.Cut(parts[1], ".")
	if !ok || len(parts[0]) != 2 || len(secs) != 2 || len(frac) != 3 {
		return 0, bad
	}
	m, ok1 := digits(parts[0])
	sec, ok2 := digits(secs)
	ms, ok3 := digits(frac)
	if !ok1 || !ok2 || !ok3 || m > 59 || sec > 59 {
		return 0, bad
	}
	return ((h*60+m)*60+sec)*1000 + ms, nil
}

func digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
	}
	return v, true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// cueText removes the cue markup (tags such as <b>, <c.loud>, <v Name>,
// <00:00:01.000> and their closing forms) and decodes character
// references. A "<" that never closes is kept as text.
func cueText(p string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(p, '<')
		if i < 0 {
			b.WriteString(p)
			break
		}
		j := strings.IndexByte(p[i:], '>')
		if j < 0 {
			b.WriteString(p)
			break
		}
		b.WriteString(p[:i])
		p = p[i+j+1:]
	}
	return html.UnescapeString(b.String())
}
