package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/gen"
)

// CreateLabelTag creates a label tag.
func (s *Server) CreateLabelTag(ctx context.Context, req gen.CreateLabelTagRequestObject) (gen.CreateLabelTagResponseObject, error) {
	t, err := s.deps.Labels.CreateLabelTag(ctx, AccountFrom(ctx).ID, labels.NewLabelTag{Name: req.Body.Name, Color: deref(req.Body.Color)})
	if err != nil {
		return nil, err
	}
	return gen.CreateLabelTag200JSONResponse{LabelTag: toAPILabelTag(t)}, nil
}

// ListLabelTags lists every tag of the account by name.
func (s *Server) ListLabelTags(ctx context.Context, _ gen.ListLabelTagsRequestObject) (gen.ListLabelTagsResponseObject, error) {
	ts, err := s.deps.Labels.ListLabelTags(ctx, AccountFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := make([]gen.LabelTag, len(ts))
	for i, t := range ts {
		out[i] = toAPILabelTag(t)
	}
	return gen.ListLabelTags200JSONResponse{LabelTags: out}, nil
}

// SetLabelTags replaces the tags of a label.
func (s *Server) SetLabelTags(ctx context.Context, req gen.SetLabelTagsRequestObject) (gen.SetLabelTagsResponseObject, error) {
	l, err := s.deps.Labels.SetLabelTags(ctx, AccountFrom(ctx).ID, req.LabelId, req.Body.LabelTagIds)
	if err != nil {
		return nil, err
	}
	return gen.SetLabelTags200JSONResponse{Label: toAPILabel(l)}, nil
}

// toAPILabelTag maps a domain tag to the API.
func toAPILabelTag(t *domain.LabelTag) gen.LabelTag {
	return gen.LabelTag{
		LabelTagId: t.ID,
		CustomerId: t.AccountID,
		Name:       t.Name,
		Color:      t.Color,
		Created:    t.Created,
		Updated:    t.Updated,
		Expunged:   false,
	}
}
