package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/gen"
)

// CreatePolicy creates a policy and its first, active version.
func (s *Server) CreatePolicy(ctx context.Context, req gen.CreatePolicyRequestObject) (gen.CreatePolicyResponseObject, error) {
	p, v, err := s.deps.Policies.Create(ctx, AccountFrom(ctx), req.Body.PolicyKey, req.Body.Text)
	if err != nil {
		return nil, err
	}
	return gen.CreatePolicy200JSONResponse{Policy: toAPIPolicy(p), PolicyVersion: toAPIPolicyVersion(v)}, nil
}

// GetPolicy returns one policy of the account.
func (s *Server) GetPolicy(ctx context.Context, req gen.GetPolicyRequestObject) (gen.GetPolicyResponseObject, error) {
	p, err := s.deps.Policies.Get(ctx, AccountFrom(ctx), req.PolicyId)
	if err != nil {
		return nil, err
	}
	return gen.GetPolicy200JSONResponse{Policy: toAPIPolicy(p)}, nil
}

// ListPolicies returns a page of the account's policies, newest first.
func (s *Server) ListPolicies(ctx context.Context, req gen.ListPoliciesRequestObject) (gen.ListPoliciesResponseObject, error) {
	ps, next, err := s.deps.Policies.List(ctx, AccountFrom(ctx), req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	out := make([]gen.Policy, len(ps))
	for i, p := range ps {
		out[i] = toAPIPolicy(p)
	}
	return gen.ListPolicies200JSONResponse{Policies: out, NextPageToken: nonEmpty(next)}, nil
}

// CreatePolicyVersion publishes a new version in its mode (active unless
// asked otherwise).
func (s *Server) CreatePolicyVersion(ctx context.Context, req gen.CreatePolicyVersionRequestObject) (gen.CreatePolicyVersionResponseObject, error) {
	var mode domain.PolicyVersionMode
	if m := req.Body.Mode; m != nil && *m != gen.POLICYVERSIONMODEUNSPECIFIED {
		mode = domain.PolicyVersionMode(*m)
	}
	v, err := s.deps.Policies.AddVersionAs(ctx, AccountFrom(ctx), req.PolicyId, req.Body.Text, mode, req.Body.ShadowSampleRate)
	if err != nil {
		return nil, err
	}
	return gen.CreatePolicyVersion200JSONResponse{PolicyVersion: toAPIPolicyVersion(v)}, nil
}

// ListPolicyVersions returns a page of a policy's versions, oldest first.
func (s *Server) ListPolicyVersions(ctx context.Context, req gen.ListPolicyVersionsRequestObject) (gen.ListPolicyVersionsResponseObject, error) {
	vs, next, err := s.deps.Policies.ListVersions(ctx, AccountFrom(ctx), req.PolicyId, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	out := make([]gen.PolicyVersion, len(vs))
	for i, v := range vs {
		out[i] = toAPIPolicyVersion(v)
	}
	return gen.ListPolicyVersions200JSONResponse{PolicyVersions: out, NextPageToken: nonEmpty(next)}, nil
}

func toAPIPolicy(p *domain.Policy) gen.Policy {
	out := gen.Policy{
		PolicyId: p.ID, PolicyKey: p.Key, ActiveVersionId: p.ActiveVersionID,
		Disabled: p.Disabled, Created: p.Created, Updated: p.Updated,
	}
	if p.ShadowVersionID != "" {
		out.ShadowVersionId, out.ShadowSampleRate = &p.ShadowVersionID, &p.ShadowSampleRate
	}
	return out
}

func toAPIPolicyVersion(v *domain.PolicyVersion) gen.PolicyVersion {
	tc := v.TokenCounts
	out := gen.PolicyVersion{
		PolicyVersionId: v.ID, PolicyId: v.PolicyID, Text: v.Text, SequentialVersion: float32(v.Seq),
		Created: v.Created, ComplexityScore: v.ComplexityScore,
		TokenCountsV2: toAPITokenCounts(tc),
	}
	if v.Mode != "" {
		out.Mode = ptr(gen.PolicyVersionMode(v.Mode))
	}
	if v.Mode == domain.PolicyVersionShadow {
		out.ShadowSampleRate = &v.ShadowSampleRate
	}
	return out
}

func toAPITokenCounts(tc rules.TokenCounts) gen.TokenCounts {
	return gen.TokenCounts{
		DslTokenCount: float32(tc.DSLTokenCount), GlobalContextTokens: float32(tc.GlobalContextTokens),
		SignalTokens: float32(tc.SignalTokens), SignalSpecialTokens: float32(tc.SignalSpecialTokens),
		ContentSpecialTokens: float32(tc.ContentSpecialTokens),
	}
}
