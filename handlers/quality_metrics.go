package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen"
)

// GetLabelVersionMetrics returns the live metrics of a label version.
func (s *Server) GetLabelVersionMetrics(ctx context.Context, req gen.GetLabelVersionMetricsRequestObject) (gen.GetLabelVersionMetricsResponseObject, error) {
	ms, err := s.deps.Quality.LabelVersionMetrics(ctx, AccountFrom(ctx), req.LabelId, req.LabelVersionId, req.Params.Since, req.Params.Until)
	if err != nil {
		return nil, err
	}
	return gen.GetLabelVersionMetrics200JSONResponse{Metrics: toAPIMetrics(ms)}, nil
}

// GetPolicyVersionMetrics returns the live metrics of a policy version.
func (s *Server) GetPolicyVersionMetrics(ctx context.Context, req gen.GetPolicyVersionMetricsRequestObject) (gen.GetPolicyVersionMetricsResponseObject, error) {
	ms, err := s.deps.Quality.PolicyVersionMetrics(ctx, AccountFrom(ctx), req.PolicyId, req.PolicyVersionId, req.Params.Since, req.Params.Until)
	if err != nil {
		return nil, err
	}
	return gen.GetPolicyVersionMetrics200JSONResponse{Metrics: toAPIMetrics(ms)}, nil
}

func toAPIMetrics(ms []*domain.VersionMetric) []gen.VersionMetric {
	out := make([]gen.VersionMetric, len(ms))
	for i, m := range ms {
		out[i] = gen.VersionMetric{
			Label: m.Label, Evaluations: int32(m.Evaluations), Positives: int32(m.Positives), Annotations: int32(m.Annotations),
			TruePositives: int32(m.TruePositives), FalsePositives: int32(m.FalsePositives),
			TrueNegatives: int32(m.TrueNegatives), FalseNegatives: int32(m.FalseNegatives),
		}
		out[i].Precision, out[i].Recall, out[i].F1, _ = confusionRates(m.Confusion)
	}
	return out
}
