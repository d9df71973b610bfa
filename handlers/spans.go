package handlers

import (
	"strconv"

	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/gen"
)

// toAPISpans maps flagged spans; nil for none, so that the field is absent.
func toAPISpans(spans []rules.TextSpan) *[]gen.FlaggedSpan {
	if len(spans) == 0 {
		return nil
	}
	out := make([]gen.FlaggedSpan, len(spans))
	for i, s := range spans {
		out[i] = gen.FlaggedSpan{Start: int32(s.Start), End: int32(s.End), Text: s.Text}
		if tr := s.Transcript; tr != nil {
			start, end := strconv.FormatInt(tr.StartMs, 10), strconv.FormatInt(tr.EndMs, 10)
			out[i].TranscriptStartMs, out[i].TranscriptEndMs = &start, &end
		}
	}
	return &out
}

// appendSpans appends ,"spans":[...] for the spans of a label hit, in the shape
// toAPISpans gives them (see labelHitsResponse).
func appendSpans(buf []byte, spans []rules.TextSpan) []byte {
	if len(spans) == 0 {
		return buf
	}
	buf = append(buf, `,"spans":[`...)
	for i, s := range spans {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"start":`...)
		buf = strconv.AppendInt(buf, int64(s.Start), 10)
		buf = append(buf, `,"end":`...)
		buf = strconv.AppendInt(buf, int64(s.End), 10)
		buf = append(buf, `,"text":`...)
		buf = appendJSONString(buf, s.Text)
		if tr := s.Transcript; tr != nil {
			buf = append(buf, `,"transcriptStartMs":"`...)
			buf = strconv.AppendInt(buf, tr.StartMs, 10)
			buf = append(buf, `","transcriptEndMs":"`...)
			buf = strconv.AppendInt(buf, tr.EndMs, 10)
			buf = append(buf, '"')
		}
		buf = append(buf, '}')
	}
	return append(buf, ']')
}
