package handlers

import (
	"context"

	"github.com/contenteval/contenteval/gen"
)

// The shadow endpoints of policies (docs/api.md#extension-endpoints).

// ActivatePolicyVersion makes a version the policy's active version.
func (s *Server) ActivatePolicyVersion(ctx context.Context, req gen.ActivatePolicyVersionRequestObject) (gen.ActivatePolicyVersionResponseObject, error) {
	p, err := s.deps.Policies.Activate(ctx, AccountFrom(ctx), req.PolicyId, req.PolicyVersionId)
	if err != nil {
		return nil, err
	}
	return gen.ActivatePolicyVersion200JSONResponse{Policy: toAPIPolicy(p)}, nil
}

// GetShadowStats summarises a version's shadow evaluations.
func (s *Server) GetShadowStats(ctx context.Context, req gen.GetShadowStatsRequestObject) (gen.GetShadowStatsResponseObject, error) {
	st, err := s.deps.Quality.ShadowStats(ctx, AccountFrom(ctx), req.PolicyId, req.PolicyVersionId)
	if err != nil {
		return nil, err
	}
	out := gen.GetShadowStats200JSONResponse{Evaluated: int32(st.Evaluated), Agreements: int32(st.Agreements),
		Disagreements: int32(st.Disagreements), Labels: make([]gen.ShadowLabelStats, len(st.Labels))}
	for i, l := range st.Labels {
		out.Labels[i] = gen.ShadowLabelStats{Label: l.Label, ActiveTrue: int32(l.ActiveTrue), ShadowTrue: int32(l.ShadowTrue), BothTrue: int32(l.BothTrue)}
	}
	return out, nil
}

// ListShadowResults returns a page of a version's shadow disagreements.
func (s *Server) ListShadowResults(ctx context.Context, req gen.ListShadowResultsRequestObject) (gen.ListShadowResultsResponseObject, error) {
	rs, next, err := s.deps.Quality.ShadowDisagreements(ctx, AccountFrom(ctx), req.PolicyId, req.PolicyVersionId, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	out := make([]gen.ShadowDisagreement, len(rs))
	for i, r := range rs {
		out[i] = gen.ShadowDisagreement{JobUuid: r.JobID, JobResultId: r.JobResultID, ContentHash: r.ContentHash, Label: r.Label,
			ActiveOutcome: gen.Outcome(r.Active), ShadowOutcome: gen.Outcome(r.Shadow)}
	}
	return gen.ListShadowResults200JSONResponse{Disagreements: out, NextPageToken: nonEmpty(next)}, nil
}
