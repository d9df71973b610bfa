package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/gen"
)

// EvaluateLabels evaluates one content item against up to ten label
// versions, one job per version.
func (s *Server) EvaluateLabels(ctx context.Context, req gen.EvaluateLabelsRequestObject) (gen.EvaluateLabelsResponseObject, error) {
	b := req.Body
	in := labels.EvaluateLabelsRequest{
		Content:         toDomainContent([]gen.ContentData{b.ContentData})[0],
		Threshold:       b.Threshold,
		LabelVersionIDs: b.LabelVersionIds,
		GlobalContext:   deref(b.GlobalContext),
	}
	if b.LabelEvalOptions != nil {
		o := toDomainLabelEvalOptions(b.LabelEvalOptions)
		in.Options = &o
	}
	res, err := s.deps.LabelEvaluation.Evaluate(ctx, AccountFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	out := make([]gen.LabelEvaluationResult, len(res.Results))
	for i, r := range res.Results {
		out[i] = toAPILabelEvaluationResult(r)
	}
	resp := gen.EvaluateLabels200JSONResponse{Results: out}
	if res.ContentHash != "" {
		resp.ContentHash = ptr(res.ContentHash)
	}
	return resp, nil
}

// toAPILabelEvaluationResult maps one result of a label evaluation.
func toAPILabelEvaluationResult(r *labels.LabelEvaluationResult) gen.LabelEvaluationResult {
	out := gen.LabelEvaluationResult{LabelVersionId: r.LabelVersionID}
	if r.LabelID != "" {
		out.LabelId = ptr(r.LabelID)
	}
	if r.JobID != "" {
		out.JobUuid = ptr(r.JobID)
	}
	if r.Error != "" {
		out.Error = ptr(r.Error)
	}
	if ev := r.Evaluation; ev != nil {
		out.Evaluation = &gen.LabelEvaluation{
			Score: ev.Score, Outcome: gen.Outcome(ev.Outcome), Threshold: ev.Threshold,
			Report: toAPIReport(ev.Job, ev.Result),
		}
	}
	return out
}
