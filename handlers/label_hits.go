package handlers

import (
	"context"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen"
)

// ListJobLabelHits returns a page of a job's label hits, or only its status
// while it is not complete.
func (s *Server) ListJobLabelHits(ctx context.Context, req gen.ListJobLabelHitsRequestObject) (gen.ListJobLabelHitsResponseObject, error) {
	p := req.Params
	page, err := s.deps.LabelEvaluation.ListJobLabelHits(ctx, AccountFrom(ctx).ID, domain.ListJobLabelHitsRequest{
		JobID: req.JobUuid, JobResultID: lderef(p.JobResultId), PageSize: p.PageSize, PageToken: lderef(p.PageToken),
	})
	if err != nil {
		return nil, err
	}
	out := gen.ListJobLabelHits200JSONResponse{
		Status: toAPIJobStatus(page.Status), Error: toAPIJobError(page.Error), NextPageToken: tokenOrNil(page.NextPageToken),
	}
	if page.Hits != nil {
		hits := make([]gen.LabelHit, len(page.Hits))
		for i, h := range page.Hits {
			hits[i] = toAPILabelHit(h)
		}
		out.Labels = &hits
	}
	return out, nil
}

// toAPILabelHit maps a hit; every bound that is set gets its timecode.
func toAPILabelHit(h *domain.LabelHit) gen.LabelHit {
	modality := gen.Modality(h.Modality)
	out := gen.LabelHit{Label: lptr(h.Label), Modality: &modality, Score: lptr(h.Score), JobResultId: lptr(h.JobResultID)}
	out.StartMs, out.StartTimecode = msAndTimecode(&h.StartMs)
	out.EndMs, out.EndTimecode = msAndTimecode(h.EndMs)
	out.FrameStartMs, out.FrameStartTimecode = msAndTimecode(h.FrameStartMs)
	out.FrameEndMs, out.FrameEndTimecode = msAndTimecode(h.FrameEndMs)
	out.TranscriptStartMs, out.TranscriptStartTimecode = msAndTimecode(h.TranscriptStartMs)
	out.TranscriptEndMs, out.TranscriptEndTimecode = msAndTimecode(h.TranscriptEndMs)
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
