package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/gen"
)

// CreateLabelVersion compiles and publishes a new version of a label.
func (s *Server) CreateLabelVersion(ctx context.Context, req gen.CreateLabelVersionRequestObject) (gen.CreateLabelVersionResponseObject, error) {
	b := req.Body
	account := AccountFrom(ctx)
	in := labels.NewLabelVersion{
		Text:                 b.Text,
		Description:          deref(b.Description),
		EvalOptions:          toDomainLabelEvalOptions(b.LabelEvalOptions),
		GlobalContext:        deref(b.GlobalContext),
		ParentLabelVersionID: deref(b.ParentLabelVersionId),
		CreatedByID:          account.ID,
	}
	if b.Blob != nil {
		in.Blob = *b.Blob
	}
	v, err := s.deps.Labels.CreateLabelVersion(ctx, account.ID, req.LabelId, in)
	if err != nil {
		return nil, err
	}
	return gen.CreateLabelVersion200JSONResponse{LabelVersion: toAPILabelVersion(v)}, nil
}

// GetLabelVersion returns one version of a label.
func (s *Server) GetLabelVersion(ctx context.Context, req gen.GetLabelVersionRequestObject) (gen.GetLabelVersionResponseObject, error) {
	v, err := s.deps.Labels.GetLabelVersion(ctx, AccountFrom(ctx).ID, req.LabelId, req.LabelVersionId)
	if err != nil {
		return nil, err
	}
	return gen.GetLabelVersion200JSONResponse{LabelVersion: toAPILabelVersion(v)}, nil
}

// ListLabelVersions returns a page of a label's versions, oldest first.
func (s *Server) ListLabelVersions(ctx context.Context, req gen.ListLabelVersionsRequestObject) (gen.ListLabelVersionsResponseObject, error) {
	page, err := s.deps.Labels.ListLabelVersions(ctx, AccountFrom(ctx).ID, req.LabelId, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	vs := make([]gen.LabelVersion, len(page.Versions))
	for i, v := range page.Versions {
		vs[i] = toAPILabelVersion(v)
	}
	return gen.ListLabelVersions200JSONResponse{LabelVersions: vs, NextPageToken: nonEmpty(page.NextPageToken)}, nil
}

// toDomainLabelEvalOptions maps API options to the domain (nil -> none).
func toDomainLabelEvalOptions(o *gen.LabelEvalOptions) domain.LabelEvalOptions {
	if o == nil {
		return domain.LabelEvalOptions{}
	}
	out := domain.LabelEvalOptions{
		BypassCache: o.BypassCache, Expedited: o.Expedited, BundleSize: o.BundleSize,
		Threshold: o.Threshold, Stack: o.Stack,
	}
	if o.ImageDetailLevel != nil {
		out.ImageDetailLevel = ptr(string(*o.ImageDetailLevel))
	}
	return out
}

// toAPILabelEvalOptions maps domain options to the API.
func toAPILabelEvalOptions(o domain.LabelEvalOptions) gen.LabelEvalOptions {
	out := gen.LabelEvalOptions{
		BypassCache: o.BypassCache, Expedited: o.Expedited, BundleSize: o.BundleSize,
		Threshold: o.Threshold, Stack: o.Stack,
	}
	if o.ImageDetailLevel != nil {
		out.ImageDetailLevel = ptr(gen.ImageDetailLevel(*o.ImageDetailLevel))
	}
	return out
}

// toAPILabelVersion maps a domain version to the API.
func toAPILabelVersion(v *domain.LabelVersion) gen.LabelVersion {
	out := gen.LabelVersion{
		LabelVersionId:    v.ID,
		LabelId:           v.LabelID,
		Text:              v.Text,
		Description:       v.Description,
		SignalCount:       float32(v.SignalCount),
		TotalSignalTokens: float32(v.TotalSignalTokens),
		Created:           v.Created,
		Expunged:          false,
		CreatedById:       v.CreatedByID,
		SequentialVersion: float32(v.SequentialVersion),
		ComplexityScore:   v.ComplexityScore,
		LabelEvalOptions:  toAPILabelEvalOptions(v.EvalOptions),
		GlobalContext:     v.GlobalContext,
		TokenCountsV2:     toAPITokenCounts(rules.TokenCounts(v.TokenCounts)),
	}
	if v.Blob != nil {
		b := v.Blob
		out.Blob = &b
	}
	if v.ParentLabelVersionID != "" {
		out.ParentLabelVersionId = ptr(v.ParentLabelVersionID)
	}
	return out
}
