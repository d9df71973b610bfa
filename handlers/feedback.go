package handlers

import (
	"context"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/gen"
)

// CreateFeedback records or replaces a reviewer's judgement on a job result.
func (s *Server) CreateFeedback(ctx context.Context, req gen.CreateFeedbackRequestObject) (gen.CreateFeedbackResponseObject, error) {
	b := req.Body
	in := labels.NewFeedback{
		JobResultID: deref(b.JobResultId), Label: deref(b.Label), LabelID: deref(b.LabelId),
		LabelVersionID: deref(b.LabelVersionId), Expected: domain.EvaluationResult(b.ExpectedOutcome), Comment: deref(b.Comment),
	}
	if t := b.Target; t != nil {
		in.ContentHash = deref(t.ContentHash)
		if o := t.Occurrence; o != nil {
			occ, err := toDomainOccurrence(o)
			if err != nil {
				return nil, err
			}
			in.Occurrence = occ
		}
	}
	a, err := s.deps.LabelEvaluation.CreateFeedback(ctx, AccountFrom(ctx).ID, req.JobUuid, in)
	if err != nil {
		return nil, err
	}
	return gen.CreateFeedback200JSONResponse{Annotation: toAPIFeedback(a)}, nil
}

// ListFeedback returns a page of a job's feedback, oldest first.
func (s *Server) ListFeedback(ctx context.Context, req gen.ListFeedbackRequestObject) (gen.ListFeedbackResponseObject, error) {
	page, err := s.deps.LabelEvaluation.ListFeedback(ctx, AccountFrom(ctx).ID, req.JobUuid, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	as := make([]gen.FeedbackAnnotation, len(page.Annotations))
	for i, a := range page.Annotations {
		as[i] = toAPIFeedback(a)
	}
	return gen.ListFeedback200JSONResponse{Annotations: as, NextPageToken: nonEmpty(page.NextPageToken)}, nil
}

func toDomainOccurrence(o *gen.Occurrence) (*domain.Occurrence, error) {
	occ := &domain.Occurrence{Modality: domain.Modality(deref(o.Modality))}
	if o.StartMs == nil {
		return nil, domain.InvalidField("target.occurrence.startMs", "is required with an occurrence")
	}
	start, err := strconv.ParseInt(*o.StartMs, 10, 64)
	if err != nil {
		return nil, domain.InvalidField("target.occurrence.startMs", "must be a 64-bit integer")
	}
	occ.StartMs = start
	if o.EndMs != nil {
		end, err := strconv.ParseInt(*o.EndMs, 10, 64)
		if err != nil {
			return nil, domain.InvalidField("target.occurrence.endMs", "must be a 64-bit integer")
		}
		occ.EndMs = &end
	}
	return occ, nil
}

// toAPIFeedback maps an annotation to the API.
func toAPIFeedback(a *domain.FeedbackAnnotation) gen.FeedbackAnnotation {
	out := gen.FeedbackAnnotation{
		Id: a.ID, JobUuid: a.JobID, JobResultId: a.JobResultID,
		Target: gen.FeedbackTarget{ContentHash: ptr(a.ContentHash)},
		Label:  a.Label, ExpectedOutcome: gen.EvaluationResult(a.Expected), ActualOutcome: gen.EvaluationResult(a.Actual),
		Comment: a.Comment, CreatedAt: a.Created, UpdatedAt: a.Updated,
	}
	if a.LabelID != "" {
		out.LabelId = ptr(a.LabelID)
	}
	if a.LabelVersionID != "" {
		out.LabelVersionId = ptr(a.LabelVersionID)
	}
	if o := a.Occurrence; o != nil {
		m := gen.Modality(o.Modality)
		occ := &gen.Occurrence{Modality: &m, StartMs: ptr(strconv.FormatInt(o.StartMs, 10))}
		if o.EndMs != nil {
			occ.EndMs = ptr(strconv.FormatInt(*o.EndMs, 10))
		}
		out.Target.Occurrence = occ
	}
	return out
}
