package domain

import (
	"context"
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
