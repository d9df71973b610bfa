package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/gen"
)

// CreateLabel creates a label without versions.
func (s *Server) CreateLabel(ctx context.Context, req gen.CreateLabelRequestObject) (gen.CreateLabelResponseObject, error) {
	b := req.Body
	in := labels.NewLabel{Name: b.Name, Description: deref(b.Description), PolicyID: deref(b.PolicyId)}
	if b.TagIds != nil {
		in.TagIDs = *b.TagIds
	}
	l, err := s.deps.Labels.CreateLabel(ctx, AccountFrom(ctx).ID, in)
	if err != nil {
		return nil, err
	}
	return gen.CreateLabel200JSONResponse{Label: toAPILabel(l)}, nil
}

// GetLabel returns one label of the account.
func (s *Server) GetLabel(ctx context.Context, req gen.GetLabelRequestObject) (gen.GetLabelResponseObject, error) {
	l, err := s.deps.Labels.GetLabel(ctx, AccountFrom(ctx).ID, req.LabelId)
	if err != nil {
		return nil, err
	}
	return gen.GetLabel200JSONResponse{Label: toAPILabel(l)}, nil
}

// ListLabels returns a page of the account's labels, newest first.
func (s *Server) ListLabels(ctx context.Context, req gen.ListLabelsRequestObject) (gen.ListLabelsResponseObject, error) {
	p := req.Params
	r := labels.ListLabelsRequest{PageSize: p.PageSize, PageToken: deref(p.PageToken), IncludeArchived: deref(p.IncludeArchived)}
	if p.TagIds != nil {
		r.TagIDs = *p.TagIds
	}
	page, err := s.deps.Labels.ListLabels(ctx, AccountFrom(ctx).ID, r)
	if err != nil {
		return nil, err
	}
	labels := make([]gen.Label, len(page.Labels))
	for i, l := range page.Labels {
		labels[i] = toAPILabel(l)
	}
	return gen.ListLabels200JSONResponse{Labels: labels, NextPageToken: nonEmpty(page.NextPageToken)}, nil
}

// UpdateLabel applies a partial update of name, disabled and description.
func (s *Server) UpdateLabel(ctx context.Context, req gen.UpdateLabelRequestObject) (gen.UpdateLabelResponseObject, error) {
	b := req.Body
	l, err := s.deps.Labels.UpdateLabel(ctx, AccountFrom(ctx).ID, req.LabelId, labels.LabelPatch{
		Name: b.Name, Description: b.Description, Disabled: b.Disabled,
	})
	if err != nil {
		return nil, err
	}
	return gen.UpdateLabel200JSONResponse{Label: toAPILabel(l)}, nil
}

// DeleteLabel soft-deletes a label that has no versions.
func (s *Server) DeleteLabel(ctx context.Context, req gen.DeleteLabelRequestObject) (gen.DeleteLabelResponseObject, error) {
	if err := s.deps.Labels.DeleteLabel(ctx, AccountFrom(ctx).ID, req.LabelId); err != nil {
		return nil, err
	}
	return gen.DeleteLabel200JSONResponse{LabelId: req.LabelId, Deleted: true}, nil
}

// ArchiveLabel sets archivedAt.
func (s *Server) ArchiveLabel(ctx context.Context, req gen.ArchiveLabelRequestObject) (gen.ArchiveLabelResponseObject, error) {
	l, err := s.deps.Labels.ArchiveLabel(ctx, AccountFrom(ctx).ID, req.LabelId)
	if err != nil {
		return nil, err
	}
	return gen.ArchiveLabel200JSONResponse{Label: toAPILabel(l)}, nil
}

// UnarchiveLabel clears archivedAt.
func (s *Server) UnarchiveLabel(ctx context.Context, req gen.UnarchiveLabelRequestObject) (gen.UnarchiveLabelResponseObject, error) {
	l, err := s.deps.Labels.UnarchiveLabel(ctx, AccountFrom(ctx).ID, req.LabelId)
	if err != nil {
		return nil, err
	}
	return gen.UnarchiveLabel200JSONResponse{Label: toAPILabel(l)}, nil
}

// toAPILabel maps a domain label to the API.
func toAPILabel(l *domain.Label) gen.Label {
	tags := make([]gen.LabelTag, len(l.Tags))
	for i, t := range l.Tags {
		tags[i] = toAPILabelTag(t)
	}
	return gen.Label{
		LabelId:     l.ID,
		Name:        l.Name,
		CustomerId:  l.AccountID,
		PolicyId:    l.PolicyID,
		Disabled:    l.Disabled,
		Created:     l.Created,
		Updated:     l.Updated,
		Expunged:    l.DeletedAt != nil,
		Description: l.Description,
		ArchivedAt:  l.ArchivedAt,
		Tags:        tags,
	}
}
