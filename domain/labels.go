package domain

import (
	"context"
	"slices"
	"strings"
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

// Label page sizes (SPEC.md Limits).
const (
	DefaultLabelPageSize = 100
	MaxLabelPageSize     = 1000
)

// LabelService implements the label-first endpoints: labels, tags and
// versions.
type LabelService struct {
	labels   LabelStore
	versions LabelVersionStore
	tags     LabelTagStore
	clock    Clock
	tokens   *PageTokens
}

// NewLabelService returns the label service on its stores.
func NewLabelService(labels LabelStore, versions LabelVersionStore, tags LabelTagStore, clock Clock, tokens *PageTokens) *LabelService {
	return &LabelService{labels: labels, versions: versions, tags: tags, clock: clock, tokens: tokens}
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
	Labels        []*Label
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
		return InvalidField("name", "must not be empty")
	case len([]rune(name)) > MaxLabelNameLength:
		return InvalidField("name", "must be at most 200 characters")
	}
	return nil
}

func validateLabelDescription(d string) error {
	if len([]rune(d)) > MaxLabelDescriptionLength {
		return InvalidField("description", "must be at most 10000 characters")
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
func (s *LabelService) CreateLabel(ctx context.Context, accountID string, in NewLabel) (*Label, error) {
	if err := validateLabelName(in.Name); err != nil {
		return nil, err
	}
	if err := validateLabelDescription(in.Description); err != nil {
		return nil, err
	}
	tagIDs := dedupeLabelIDs(in.TagIDs)
	if len(tagIDs) > MaxTagsPerLabel {
		return nil, InvalidField("tagIds", "at most 100 tags per label")
	}
	now := s.clock.Now()
	l := &Label{
		ID: NewID(), AccountID: accountID, Name: in.Name, PolicyID: in.PolicyID,
		Description: in.Description, Created: now, Updated: now,
	}
	if err := s.labels.CreateLabel(ctx, l, tagIDs); err != nil {
		return nil, err
	}
	return l, nil
}

// GetLabel returns one label of the account, archived ones included.
// Codes: NOT_FOUND.
func (s *LabelService) GetLabel(ctx context.Context, accountID, id string) (*Label, error) {
	return s.labels.GetLabel(ctx, accountID, id)
}

// ListLabels returns one page of the account's labels, newest first.
// Codes: INVALID_ARGUMENT (negative page_size, page_token of another
// request).
func (s *LabelService) ListLabels(ctx context.Context, accountID string, r ListLabelsRequest) (*LabelPage, error) {
	tagIDs := dedupeLabelIDs(r.TagIDs)
	slices.Sort(tagIDs)
	q := PageQuery{SizeField: "page_size", TokenField: "page_token", Size: r.PageSize, Token: r.PageToken,
		Default: DefaultLabelPageSize, Max: MaxLabelPageSize,
		Scope: "listLabels\x00" + accountID + "\x00" + labelBoolString(r.IncludeArchived) + "\x00" + strings.Join(tagIDs, "\x00")}
	labels, next, err := keysetPage(s.tokens, q, nil, func(after *LabelCursor, limit int) ([]*Label, error) {
		return s.labels.ListLabels(ctx, LabelQuery{AccountID: accountID, IncludeArchived: r.IncludeArchived, TagIDs: tagIDs, Limit: limit, After: after})
	}, func(l *Label) LabelCursor { return LabelCursor{Created: l.Created, ID: l.ID} })
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
func (s *LabelService) UpdateLabel(ctx context.Context, accountID, id string, p LabelPatch) (*Label, error) {
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
	return s.labels.UpdateLabel(ctx, accountID, id, func(l *Label) error {
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
func (s *LabelService) DeleteLabel(ctx context.Context, accountID, id string) error {
	return s.labels.DeleteLabel(ctx, accountID, id, s.clock.Now())
}

// ArchiveLabel sets ArchivedAt; archiving an archived label keeps the first
// time. Codes: NOT_FOUND.
func (s *LabelService) ArchiveLabel(ctx context.Context, accountID, id string) (*Label, error) {
	return s.labels.UpdateLabel(ctx, accountID, id, func(l *Label) error {
		if l.ArchivedAt == nil {
			now := s.clock.Now()
			l.ArchivedAt = &now
			l.Updated = now
		}
		return nil
	})
}

// UnarchiveLabel clears ArchivedAt. Codes: NOT_FOUND.
func (s *LabelService) UnarchiveLabel(ctx context.Context, accountID, id string) (*Label, error) {
	return s.labels.UpdateLabel(ctx, accountID, id, func(l *Label) error {
		if l.ArchivedAt != nil {
			l.ArchivedAt = nil
			l.Updated = s.clock.Now()
		}
		return nil
	})
}

// SetLabelTags replaces the label's tags. Codes: INVALID_ARGUMENT (more than
// 100), NOT_FOUND (label, or a tag that is not the account's).
func (s *LabelService) SetLabelTags(ctx context.Context, accountID, id string, tagIDs []string) (*Label, error) {
	tagIDs = dedupeLabelIDs(tagIDs)
	if len(tagIDs) > MaxTagsPerLabel {
		return nil, InvalidField("labelTagIds", "at most 100 tags per label")
	}
	return s.labels.SetLabelTags(ctx, accountID, id, tagIDs, s.clock.Now())
}
