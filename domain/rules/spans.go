package rules

// Flagged spans: where in the evaluated text the signals of a rule that fired
// matched, in code points, for reports and label hits.

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The bounds on flagged spans. A hostile text can repeat a phrase thousands of
// times and a REGEX can match all of it, so a report carries at most
// MaxSpansPerAssertion spans per rule and MaxSpansPerReport in all, whose text
// is at most MaxSpanTextBytes together; spans past a bound are left out (the
// earliest in the text are kept). Spans are only ever left out whole, so every
// span still slices the evaluated text to its Text.
const (
	MaxSpansPerAssertion = 16
	MaxSpansPerReport    = 256
	MaxSpanTextBytes     = 64 << 10
	// MaxSpansPerHit bounds the spans of one label hit: those of the TRUE rules of
	// its section, de-duplicated.
	MaxSpansPerHit = 64
)

// SpansTruncatedMessage says what a report whose SpansTruncated is set left
// out, and by which bounds.
var SpansTruncatedMessage = fmt.Sprintf("flagged spans were left out: a report carries at most %d spans per rule and %d in all, "+
	"whose text is at most %d KiB together, and locates at most the first %d matches of each signal; "+
	"outcomes, scores and labelMatches are complete", MaxSpansPerAssertion, MaxSpansPerReport, MaxSpanTextBytes>>10, maxOccurrences)

// TextSpan is a flagged span: the part [Start, End) of the evaluated text that a
// signal of a TRUE rule matched, in Unicode code points (not bytes, not UTF-16
// units), and that part itself.
//
// The evaluated text is the item's text, the text OCR read from an image, or the
// text of one transcript chunk; Transcript tells the last apart.
type TextSpan struct {
	Start, End int
	Text       string
	// Transcript is set for spans of a transcript chunk: the chunk's bounds on the
	// media timeline, which name the text the offsets count in.
	Transcript *TimeRange `json:",omitempty"`
}

// TimeRange is a range of a media timeline in milliseconds.
type TimeRange struct {
	StartMs, EndMs int64
}

// pendingSpans are the spans of one assertion while the report is built: a range
// of scratch.flagged, still in bytes.
type pendingSpans struct {
	as       *AssertionReport
	from, to int
}

// flag records the spans of a TRUE rule for its assertion report: the
// occurrences of its signals that reached the threshold, except under NOT and
// NONE (see spans), in text order, de-duplicated and bounded.
func (st *evalState) flag(as *AssertionReport, root *node) {
	if st.text == "" {
		return
	}
	sc := st.sc
	raw := st.spans(root, sc.raw[:0])
	sc.raw = raw
	raw = dedupeSpans(raw)
	if st.capped(root) {
		st.spansTruncated = true
	}
	from := len(sc.flagged)
	for i, s := range raw {
		if i == MaxSpansPerAssertion || len(sc.flagged) == MaxSpansPerReport {
			st.spansTruncated = true
			break
		}
		if n := s.End - s.Start; n <= 0 || st.spanBytes+n > MaxSpanTextBytes {
			st.spansTruncated = st.spansTruncated || n > 0
			continue
		}
		st.spanBytes += s.End - s.Start
		sc.flagged = append(sc.flagged, s)
	}
	if len(sc.flagged) > from {
		sc.pending = append(sc.pending, pendingSpans{as: as, from: from, to: len(sc.flagged)})
	}
}

// capped reports whether a signal that flags spans of n (see spans) kept
// fewer positions than it matched.
func (st *evalState) capped(n *node) bool {
	switch n.kind {
	case exNot, exNone:
		return false
	case exSignal:
		return st.sig[n.sig].capped && st.sig[n.sig].score >= st.t
	case exContext:
		return st.ctx[n.sig].capped && st.ctx[n.sig].score >= st.t
	}
	for _, k := range n.kids {
		if st.capped(k) {
			return true
		}
	}
	return false
}

// finishSpans turns the byte ranges flag recorded into the TextSpans of their
// assertions. Their text is copied into one string, so a report (which may be
// cached) does not keep the whole evaluated text alive, and the offsets become
// code points in one pass over the text however many spans there are.
func (st *evalState) finishSpans() {
	sc := st.sc
	defer func() {
		clear(sc.pending) // the pool must not keep reports alive
		sc.pending, sc.flagged = sc.pending[:0], sc.flagged[:0]
	}()
	if len(sc.pending) == 0 {
		return
	}
	var b strings.Builder
	b.Grow(st.spanBytes)
	for _, s := range sc.flagged {
		b.WriteString(st.text[s.Start:s.End])
	}
	joined := b.String()
	out := make([]TextSpan, len(sc.flagged))
	at := 0
	for i, s := range sc.flagged {
		n := s.End - s.Start
		out[i] = TextSpan{Start: s.Start, End: s.End, Text: joined[at : at+n], Transcript: st.transcript}
		at += n
	}
	toCodePoints(st.text, out, &sc.offsets)
	lists := make([][]TextSpan, len(sc.pending))
	for i, p := range sc.pending {
		lists[i] = out[p.from:p.to:p.to]
		p.as.Spans = &lists[i]
	}
}

// toCodePoints rewrites the byte offsets of spans as code-point offsets of text.
// The offsets are visited in increasing order, so the text is counted once up to
// the last of them. buf is scratch space.
func toCodePoints(text string, spans []TextSpan, buf *[]int32) {
	// Offset k is spans[k/2].Start for even k, spans[k/2].End for odd k.
	at := func(k int32) *int {
		if k%2 == 0 {
			return &spans[k/2].Start
		}
		return &spans[k/2].End
	}
	idx := (*buf)[:0]
	for k := range 2 * len(spans) {
		idx = append(idx, int32(k))
	}
	*buf = idx
	slices.SortFunc(idx, func(a, b int32) int { return *at(a) - *at(b) })
	pos, cp := 0, 0
	for _, k := range idx {
		off := at(k)
		cp += utf8.RuneCountInString(text[pos:*off])
		pos, *off = *off, cp
	}
}

// FlaggedSpans returns the spans of the section's TRUE rules (not of its
// exception), de-duplicated, in text order, at most MaxSpansPerHit: what a label
// hit of the section shows.
func (s *SectionReport) FlaggedSpans() []TextSpan {
	var out []TextSpan
	for i := range s.Assertions {
		out = append(out, s.Assertions[i].FlaggedSpans()...)
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortStableFunc(out, func(a, b TextSpan) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.End - b.End
	})
	out = slices.CompactFunc(out, func(a, b TextSpan) bool { return a.Start == b.Start && a.End == b.End })
	return slices.Clip(out[:min(len(out), MaxSpansPerHit)])
}

// LimitSpans holds a report assembled from several evaluations (the frames and
// transcript chunks of a media item) to the bounds of one evaluation: at most
// MaxSpansPerReport spans whose text is at most MaxSpanTextBytes together, the
// first in report order kept (the document exception, then each section's rules
// and exception). It returns r when r is within them, otherwise a copy with the
// assertions trimmed: reports are never changed in place.
func LimitSpans(r *Report) *Report {
	if r == nil || withinSpanBounds(r) {
		return r
	}
	out := *r
	n, size := 0, 0
	limit := func(as []AssertionReport) []AssertionReport {
		as = slices.Clone(as)
		for i := range as {
			spans := as[i].FlaggedSpans()
			var kept []TextSpan
			for _, s := range spans {
				if n == MaxSpansPerReport || size+len(s.Text) > MaxSpanTextBytes {
					out.SpansTruncated = true
					continue
				}
				n, size = n+1, size+len(s.Text)
				kept = append(kept, s)
			}
			as[i].Spans = nil
			if len(kept) > 0 {
				as[i].Spans = &kept
			}
		}
		return as
	}
	copies := map[*ExceptionReport]*ExceptionReport{}
	exception := func(e *ExceptionReport) *ExceptionReport {
		if e == nil {
			return nil
		}
		if c, ok := copies[e]; ok {
			return c
		}
		c := *e
		c.Assertions = limit(e.Assertions)
		copies[e] = &c
		return &c
	}
	out.Exception = exception(r.Exception)
	out.Sections = slices.Clone(r.Sections)
	for i := range out.Sections {
		s := &out.Sections[i]
		s.Assertions = limit(s.Assertions)
		s.Exception = exception(s.Exception)
	}
	return &out
}

func withinSpanBounds(r *Report) bool {
	n, size := 0, 0
	seen := map[*ExceptionReport]bool{}
	count := func(as []AssertionReport) {
		for i := range as {
			for _, s := range as[i].FlaggedSpans() {
				n, size = n+1, size+len(s.Text)
			}
		}
	}
	exception := func(e *ExceptionReport) {
		if e != nil && !seen[e] {
			seen[e] = true
			count(e.Assertions)
		}
	}
	exception(r.Exception)
	for i := range r.Sections {
		count(r.Sections[i].Assertions)
		exception(r.Sections[i].Exception)
	}
	return n <= MaxSpansPerReport && size <= MaxSpanTextBytes
}
