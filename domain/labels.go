package domain

import (
	"context"
	"time"
)

// Label is a named rule entity of a label-first account; its rules live in
// immutable LabelVersions. A label is either policy-scoped (PolicyID set,
// unique by account, name and policy) or independent (PolicyID empty, unique
// by account and name among independent labels).
type Label struct {
	ID          string
	AccountID   string
	Name        string
	PolicyID    string // "" for an independent label
	Description string
	Disabled    bool
	Created     time.Time
	Updated     time.Time
	// ArchivedAt is set while the label is archived; archived labels are
	// listed only on request and cannot be evaluated.
	ArchivedAt *time.Time
	// DeletedAt is set by DeleteLabel (soft delete, "expunged"). Stores never
	// return deleted labels, so their names are free for reuse.
	DeletedAt *time.Time
	// Tags are the label's tags, ordered by name.
	Tags []*LabelTag
}

// LabelCursor is the keyset position of a label in the newest-first order.
type LabelCursor struct {
	Created time.Time `json:"c"`
	ID      string    `json:"i"`
}

// LabelQuery selects a page of an account's labels, newest first (created
// descending, then id descending). Deleted labels are never returned.
type LabelQuery struct {
	AccountID       string
	IncludeArchived bool
	// TagIDs, when not empty, keeps labels having any of these tags.
	TagIDs []string
	// After, when set, starts the page after this position.
	After *LabelCursor
	// Limit is the most labels returned.
	Limit int
}

// LabelStore persists labels and their tag assignments. Every method is
// scoped to an account: a label of another account is NOT_FOUND.
type LabelStore interface {
	// CreateLabel inserts l with the tags tagIDs (tags of l.AccountID) and
	// fills l.Tags. Codes: ALREADY_EXISTS (name taken in its scope),
	// NOT_FOUND (a tag is not one of the account's).
	CreateLabel(ctx context.Context, l *Label, tagIDs []string) error
	// GetLabel returns a label that is not deleted. Codes: NOT_FOUND.
	GetLabel(ctx context.Context, accountID, id string) (*Label, error)
	// ListLabels returns one page of labels for q.
	ListLabels(ctx context.Context, q LabelQuery) ([]*Label, error)
	// UpdateLabel loads the label, applies fn and saves name, description,
	// disabled, archivedAt and updated in one transaction. Codes: NOT_FOUND,
	// ALREADY_EXISTS (renamed onto a taken name), whatever fn returns.
	UpdateLabel(ctx context.Context, accountID, id string, fn func(*Label) error) (*Label, error)
	// DeleteLabel soft-deletes a label that has no version at all.
	// Codes: NOT_FOUND, FAILED_PRECONDITION (the label has versions).
	DeleteLabel(ctx context.Context, accountID, id string, at time.Time) error
	// SetLabelTags replaces the label's tags with tagIDs and sets Updated to
	// at. Codes: NOT_FOUND (label, or a tag not of the account).
	SetLabelTags(ctx context.Context, accountID, id string, tagIDs []string, at time.Time) (*Label, error)
}

// Label field limits (openapi.yaml enforces them at the edge too).
const (
	MaxLabelNameLength        = 200
	MaxLabelDescriptionLength = 10000
	MaxTagsPerLabel           = 100
)

// Label page sizes (docs/api.md#paging).
const (
	DefaultLabelPageSize = 100
	MaxLabelPageSize     = 1000
)
