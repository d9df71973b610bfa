package labels

import (
	"context"
	"slices"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/paging"
)

// Service implements the label-first endpoints: labels, tags and
// versions.
type Service struct {
	labels   domain.LabelStore
	versions domain.LabelVersionStore
	tags     domain.LabelTagStore
	clock    domain.Clock
	tokens   *paging.Tokens
	backends domain.SignalBackends
}

// WithBackends makes version creation accept the stacks of b (without, only
// the built-in evaluators).
func (s *Service) WithBackends(b domain.SignalBackends) *Service {
	s.backends = b
	return s
}

// NewService returns the label service on its stores.
func NewService(labels domain.LabelStore, versions domain.LabelVersionStore, tags domain.LabelTagStore, clock domain.Clock, tokens *paging.Tokens) *Service {
	return &Service{labels: labels, versions: versions, tags: tags, clock: clock, tokens: tokens}
}

// NewLabel is the input of CreateLabel.
type NewLabel struct {
	Name        string
	Description string
	PolicyID    string
	TagIDs      []string
}

// LabelPatch is a partial label update: nil fields keep their values.
type LabelPatch struct {
	Name        *string
	Description *string
	Disabled    *bool
}

// LabelPage is one page of ListLabels.
type LabelPage struct {
	Labels        []*domain.Label
	NextPageToken string
}

// ListLabelsRequest is the input of ListLabels.
type ListLabelsRequest struct {
	PageSize        *int32
	PageToken       string
	IncludeArchived bool
	TagIDs          []string
}

func validateLabelName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return domain.InvalidField("name", "must not be empty")
	case len([]rune(name)) > domain.MaxLabelNameLength:
		return domain.InvalidField("name", "must be at most 200 characters")
	}
	return nil
}

func validateLabelDescription(d string) error {
	if len([]rune(d)) > domain.MaxLabelDescriptionLength {
		return domain.InvalidField("description", "must be at most 10000 characters")
	}
	return nil
}

// dedupeLabelIDs returns ids without duplicates, in first-seen order.
func dedupeLabelIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// CreateLabel creates a label without versions. Codes: INVALID_ARGUMENT,
// ALREADY_EXISTS, NOT_FOUND (a tag of another account or unknown).
func (s *Service) CreateLabel(ctx context.Context, accountID string, in NewLabel) (*domain.Label, error) {
	if err := validateLabelName(in.Name); err != nil {
		return nil, err
	}
	if err := validateLabelDescription(in.Description); err != nil {
		return nil, err
	}
	tagIDs := dedupeLabelIDs(in.TagIDs)
	if len(tagIDs) > domain.MaxTagsPerLabel {
		return nil, domain.InvalidField("tagIds", "at most 100 tags per label")
	}
	now := s.clock.Now()
	l := &domain.Label{
		ID: domain.NewID(), AccountID: accountID, Name: in.Name, PolicyID: in.PolicyID,
		Description: in.Description, Created: now, Updated: now,
	}
	if err := s.labels.CreateLabel(ctx, l, tagIDs); err != nil {
		return nil, err
	}
	return l, nil
}

// GetLabel returns one label of the account, archived ones included.
// Codes: NOT_FOUND.
func (s *Service) GetLabel(ctx context.Context, accountID, id string) (*domain.Label, error) {
	return s.labels.GetLabel(ctx, accountID, id)
}

// ListLabels returns one page of the account's labels, newest first.
// Codes: INVALID_ARGUMENT (negative page_size, page_token of another
// request).
func (s *Service) ListLabels(ctx context.Context, accountID string, r ListLabelsRequest) (*LabelPage, error) {
	tagIDs := dedupeLabelIDs(r.TagIDs)
	slices.Sort(tagIDs)
	q := paging.Query{SizeField: "page_size", TokenField: "page_token", Size: r.PageSize, Token: r.PageToken,
		Default: domain.DefaultLabelPageSize, Max: domain.MaxLabelPageSize,
		Scope: "listLabels\x00" + accountID + "\x00" + labelBoolString(r.IncludeArchived) + "\x00" + strings.Join(tagIDs, "\x00")}
	labels, next, err := paging.Keyset(s.tokens, q, nil, func(after *domain.LabelCursor, limit int) ([]*domain.Label, error) {
		return s.labels.ListLabels(ctx, domain.LabelQuery{AccountID: accountID, IncludeArchived: r.IncludeArchived, TagIDs: tagIDs, Limit: limit, After: after})
	}, func(l *domain.Label) domain.LabelCursor { return domain.LabelCursor{Created: l.Created, ID: l.ID} })
	if err != nil {
		return nil, err
	}
	return &LabelPage{Labels: labels, NextPageToken: next}, nil
}

func labelBoolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// UpdateLabel applies a partial update of name, description and disabled.
// Codes: INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS (name taken).
func (s *Service) UpdateLabel(ctx context.Context, accountID, id string, p LabelPatch) (*domain.Label, error) {
	if p.Name != nil {
		if err := validateLabelName(*p.Name); err != nil {
			return nil, err
		}
	}
	if p.Description != nil {
		if err := validateLabelDescription(*p.Description); err != nil {
			return nil, err
		}
	}
	return s.labels.UpdateLabel(ctx, accountID, id, func(l *domain.Label) error {
		if p.Name != nil {
			l.Name = *p.Name
		}
		if p.Description != nil {
			l.Description = *p.Description
		}
		if p.Disabled != nil {
			l.Disabled = *p.Disabled
		}
		l.Updated = s.clock.Now()
		return nil
	})
}

// DeleteLabel soft-deletes a label without versions. Codes: NOT_FOUND,
// FAILED_PRECONDITION (it has versions: archive it instead).
func (s *Service) DeleteLabel(ctx context.Context, accountID, id string) error {
	return s.labels.DeleteLabel(ctx, accountID, id, s.clock.Now())
}

// ArchiveLabel sets ArchivedAt; archiving an archived label keeps the first
// time. Codes: NOT_FOUND.
func (s *Service) ArchiveLabel(ctx context.Context, accountID, id string) (*domain.Label, error) {
	return s.labels.UpdateLabel(ctx, accountID, id, func(l *domain.Label) error {
		if l.ArchivedAt == nil {
			now := s.clock.Now()
			l.ArchivedAt = &now
			l.Updated = now
		}
		return nil
	})
}

// UnarchiveLabel clears ArchivedAt. Codes: NOT_FOUND.
func (s *Service) UnarchiveLabel(ctx context.Context, accountID, id string) (*domain.Label, error) {
	return s.labels.UpdateLabel(ctx, accountID, id, func(l *domain.Label) error {
		if l.ArchivedAt != nil {
			l.ArchivedAt = nil
			l.Updated = s.clock.Now()
		}
		return nil
	})
}

// SetLabelTags replaces the label's tags. Codes: INVALID_ARGUMENT (more than
// 100), NOT_FOUND (label, or a tag that is not the account's).
func (s *Service) SetLabelTags(ctx context.Context, accountID, id string, tagIDs []string) (*domain.Label, error) {
	tagIDs = dedupeLabelIDs(tagIDs)
	if len(tagIDs) > domain.MaxTagsPerLabel {
		return nil, domain.InvalidField("labelTagIds", "at most 100 tags per label")
	}
	return s.labels.SetLabelTags(ctx, accountID, id, tagIDs, s.clock.Now())
}
