package handlers

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/gen"
)

// ListJobLabelHits returns a page of a job's label hits, or only its status
// while it is not complete.
func (s *Server) ListJobLabelHits(ctx context.Context, req gen.ListJobLabelHitsRequestObject) (gen.ListJobLabelHitsResponseObject, error) {
	if err := s.reviewerJob(ctx, req.JobUuid); err != nil {
		return nil, err
	}
	p := req.Params
	page, err := s.deps.LabelEvaluation.ListJobLabelHits(ctx, AccountFrom(ctx).ID, labels.ListJobLabelHitsRequest{
		JobID: req.JobUuid, JobResultID: deref(p.JobResultId), PageSize: p.PageSize, PageToken: deref(p.PageToken),
	})
	if err != nil {
		return nil, err
	}
	return labelHitsResponse{page}, nil
}

// toAPILabelHit maps a hit; every bound that is set gets its timecode.
func toAPILabelHit(h *domain.LabelHit) gen.LabelHit {
	out := gen.LabelHit{
		Label: h.Label, Modality: gen.Modality(h.Modality), Score: h.Score, JobResultId: h.JobResultID,
		StartMs: strconv.FormatInt(h.StartMs, 10), StartTimecode: timecode(h.StartMs),
	}
	out.EndMs, out.EndTimecode = msAndTimecode(h.EndMs)
	out.FrameStartMs, out.FrameStartTimecode = msAndTimecode(h.FrameStartMs)
	out.FrameEndMs, out.FrameEndTimecode = msAndTimecode(h.FrameEndMs)
	out.TranscriptStartMs, out.TranscriptStartTimecode = msAndTimecode(h.TranscriptStartMs)
	out.TranscriptEndMs, out.TranscriptEndTimecode = msAndTimecode(h.TranscriptEndMs)
	out.Spans = toAPISpans(h.Spans)
	return out
}

// msAndTimecode returns a bound as a decimal string and as HH:MM:SS.mmm, or
// two nils when it is not set. It runs for every bound of up to 1,000 hits
// per page, so it formats by hand rather than through fmt.
func msAndTimecode(ms *int64) (*string, *string) {
	if ms == nil {
		return nil, nil
	}
	dec := strconv.FormatInt(*ms, 10)
	tc := timecode(*ms)
	return &dec, &tc
}

// timecode formats milliseconds as HH:MM:SS.mmm (hours grow past two digits;
// negative values, which no evaluation produces, clamp to zero).
func timecode(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	h := ms / 3_600_000
	var b [32]byte
	out := b[:0]
	if h < 10 {
		out = append(out, '0')
	}
	out = strconv.AppendInt(out, h, 10)
	two := func(v int64) {
		out = append(out, byte('0'+v/10), byte('0'+v%10))
	}
	out = append(out, ':')
	two(ms / 60_000 % 60)
	out = append(out, ':')
	two(ms / 1000 % 60)
	v := ms % 1000
	out = append(out, '.', byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	return string(out)
}

// labelHitsResponse writes the ListJobLabelHitsResponse JSON by hand: a page
// holds up to 1,000 hits of up to 15 fields each, and reflection-based
// encoding of the generated types was a third of the request's CPU. The
// shape is exactly toAPILabelHit's (the end-to-end tests validate it
// against openapi.yaml).
type labelHitsResponse struct{ page *labels.LabelHitPage }

func (r labelHitsResponse) VisitListJobLabelHitsResponse(w http.ResponseWriter) error {
	p := r.page
	buf := make([]byte, 0, 128+480*len(p.Hits))
	buf = append(buf, `{"status":`...)
	buf = appendJSONString(buf, string(toAPIJobStatus(p.Status)))
	if e := toAPIJobError(p.Error); e != nil {
		buf = append(buf, `,"error":{"reason":`...)
		buf = appendJSONString(buf, string(e.Reason))
		buf = append(buf, `,"message":`...)
		buf = appendJSONString(buf, e.Message)
		buf = append(buf, '}')
	}
	if p.NextPageToken != "" {
		buf = append(buf, `,"nextPageToken":`...)
		buf = appendJSONString(buf, p.NextPageToken)
	}
	if p.Hits != nil {
		buf = append(buf, `,"labels":[`...)
		for i, h := range p.Hits {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendLabelHit(buf, h)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, '}', '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(buf)
	return err
}

func appendLabelHit(buf []byte, h *domain.LabelHit) []byte {
	buf = append(buf, `{"label":`...)
	buf = appendJSONString(buf, h.Label)
	buf = append(buf, `,"modality":`...)
	buf = appendJSONString(buf, string(h.Modality))
	buf = append(buf, `,"score":`...)
	score := h.Score
	if math.IsNaN(score) || math.IsInf(score, 0) {
		score = 0
	}
	buf = strconv.AppendFloat(buf, score, 'g', -1, 64)
	buf = append(buf, `,"jobResultId":`...)
	buf = appendJSONString(buf, h.JobResultID)
	start := h.StartMs
	buf = appendBound(buf, "startMs", "startTimecode", &start)
	buf = appendBound(buf, "endMs", "endTimecode", h.EndMs)
	buf = appendBound(buf, "frameStartMs", "frameStartTimecode", h.FrameStartMs)
	buf = appendBound(buf, "frameEndMs", "frameEndTimecode", h.FrameEndMs)
	buf = appendBound(buf, "transcriptStartMs", "transcriptStartTimecode", h.TranscriptStartMs)
	buf = appendBound(buf, "transcriptEndMs", "transcriptEndTimecode", h.TranscriptEndMs)
	buf = appendSpans(buf, h.Spans)
	return append(buf, '}')
}

// appendBound appends ,"<ms>":"123","<tc>":"00:00:00.123" for a set bound.
func appendBound(buf []byte, msField, tcField string, ms *int64) []byte {
	if ms == nil {
		return buf
	}
	buf = append(buf, ',', '"')
	buf = append(buf, msField...)
	buf = append(buf, '"', ':', '"')
	buf = strconv.AppendInt(buf, *ms, 10)
	buf = append(buf, '"', ',', '"')
	buf = append(buf, tcField...)
	buf = append(buf, '"', ':', '"')
	buf = append(buf, timecode(*ms)...)
	return append(buf, '"')
}

// appendJSONString appends s as a JSON string, escaping as encoding/json
// does (quotes, backslashes, control characters, <, >, &, U+2028, U+2029)
// and replacing invalid UTF-8 with U+FFFD.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}
