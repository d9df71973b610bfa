package handlers

import (
	"context"
	"fmt"
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
// two nils when it is not set.
func msAndTimecode(ms *int64) (*string, *string) {
	if ms == nil {
		return nil, nil
	}
	v := *ms
	if v < 0 {
		v = 0
	}
	tc := fmt.Sprintf("%02d:%02d:%02d.%03d", v/3_600_000, v/60_000%60, v/1000%60, v%1000)
	return lptr(strconv.FormatInt(*ms, 10)), &tc
}
