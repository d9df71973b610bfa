package labels

import (
	"context"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// NewLabelTag is the input of CreateLabelTag.
type NewLabelTag struct {
	Name  string
	Color string
}

// CreateLabelTag creates a tag. Codes: INVALID_ARGUMENT, ALREADY_EXISTS,
// FAILED_PRECONDITION (too many tags).
func (s *Service) CreateLabelTag(ctx context.Context, accountID string, in NewLabelTag) (*domain.LabelTag, error) {
	switch {
	case strings.TrimSpace(in.Name) == "":
		return nil, domain.InvalidField("name", "must not be empty")
	case len([]rune(in.Name)) > 200:
		return nil, domain.InvalidField("name", "must be at most 200 characters")
	case len([]rune(in.Color)) > 32:
		return nil, domain.InvalidField("color", "must be at most 32 characters")
	}
	now := s.clock.Now()
	t := &domain.LabelTag{ID: domain.NewID(), AccountID: accountID, Name: in.Name, Color: in.Color, Created: now, Updated: now}
	if err := s.tags.CreateLabelTag(ctx, t, domain.MaxLabelTagsPerAccount); err != nil {
		return nil, err
	}
	return t, nil
}

// ListLabelTags returns every tag of the account, by name.
func (s *Service) ListLabelTags(ctx context.Context, accountID string) ([]*domain.LabelTag, error) {
	return s.tags.ListLabelTags(ctx, accountID)
}
