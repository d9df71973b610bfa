package domain

import (
	"context"
	"strings"
	"time"
)

// LabelTag is a named, coloured tag an account attaches to its labels. Names
// are unique per account.
type LabelTag struct {
	ID        string
	AccountID string
	Name      string
	Color     string
	Created   time.Time
	Updated   time.Time
}

// MaxLabelTagsPerAccount bounds the tags of one account (ListLabelTags
// returns them all in one response).
const MaxLabelTagsPerAccount = 1000

// LabelTagStore persists label tags.
type LabelTagStore interface {
	// CreateLabelTag inserts t unless the account already has max tags.
	// Codes: ALREADY_EXISTS (name taken in the account), FAILED_PRECONDITION
	// (the account has max tags).
	CreateLabelTag(ctx context.Context, t *LabelTag, max int) error
	// ListLabelTags returns every tag of the account ordered by name, then id.
	ListLabelTags(ctx context.Context, accountID string) ([]*LabelTag, error)
}

// NewLabelTag is the input of CreateLabelTag.
type NewLabelTag struct {
	Name  string
	Color string
}

// CreateLabelTag creates a tag. Codes: INVALID_ARGUMENT, ALREADY_EXISTS,
// FAILED_PRECONDITION (too many tags).
func (s *LabelService) CreateLabelTag(ctx context.Context, accountID string, in NewLabelTag) (*LabelTag, error) {
	switch {
	case strings.TrimSpace(in.Name) == "":
		return nil, InvalidField("name", "must not be empty")
	case len([]rune(in.Name)) > 200:
		return nil, InvalidField("name", "must be at most 200 characters")
	case len([]rune(in.Color)) > 32:
		return nil, InvalidField("color", "must be at most 32 characters")
	}
	now := s.clock.Now()
	t := &LabelTag{ID: NewID(), AccountID: accountID, Name: in.Name, Color: in.Color, Created: now, Updated: now}
	if err := s.tags.CreateLabelTag(ctx, t, MaxLabelTagsPerAccount); err != nil {
		return nil, err
	}
	return t, nil
}

// ListLabelTags returns every tag of the account, by name.
func (s *LabelService) ListLabelTags(ctx context.Context, accountID string) ([]*LabelTag, error) {
	return s.tags.ListLabelTags(ctx, accountID)
}
