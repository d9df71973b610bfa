package domain

import (
	"context"
	"time"
)

// LabelVersion is one immutable, published revision of a label's rules.
// Versions are append-only: nothing updates or deletes one once it is
// created. SequentialVersion numbers a label's versions 1, 2, 3, ... with no
// gaps or duplicates.
type LabelVersion struct {
	ID                   string
	LabelID              string
	AccountID            string
	SequentialVersion    int64
	Text                 string
	Blob                 []byte
	Description          string
	GlobalContext        string
	ParentLabelVersionID string
	CreatedByID          string
	EvalOptions          LabelEvalOptions
	SignalCount          int
	TotalSignalTokens    int
	ComplexityScore      float64
	TokenCounts          LabelTokenCounts
	Created              time.Time
}

// LabelEvalOptions are per-label evaluation options; nil fields are unset,
// which matters for the threshold precedence of label evaluation.
type LabelEvalOptions struct {
	BypassCache      *bool    `json:"bypassCache,omitempty"`
	Expedited        *bool    `json:"expedited,omitempty"`
	BundleSize       *int32   `json:"bundleSize,omitempty"`
	Threshold        *float64 `json:"threshold,omitempty"`
	Stack            *string  `json:"stack,omitempty"`
	ImageDetailLevel *string  `json:"imageDetailLevel,omitempty"`
}

// LabelTokenCounts are the token figures of a version (tokenCountsV2).
type LabelTokenCounts struct {
	DSLTokenCount        int
	GlobalContextTokens  int
	SignalTokens         int
	SignalSpecialTokens  int
	ContentSpecialTokens int
}

// LabelVersionCursor is the keyset position of a version in the
// (sequentialVersion, id) ascending order.
type LabelVersionCursor struct {
	Seq int64  `json:"s"`
	ID  string `json:"i"`
}

// LabelVersionStore persists label versions. It has no update or delete.
type LabelVersionStore interface {
	// CreateLabelVersion assigns v.SequentialVersion (one more than the
	// label's last, never reused, safe under concurrent callers) and inserts
	// v. The label must be v.AccountID's and not deleted; a set
	// ParentLabelVersionID must be a version of the same label. Codes:
	// NOT_FOUND (label), INVALID_ARGUMENT (parent).
	CreateLabelVersion(ctx context.Context, v *LabelVersion) error
	// GetLabelVersion returns the version id of the account's label labelID.
	// Codes: NOT_FOUND.
	GetLabelVersion(ctx context.Context, accountID, labelID, id string) (*LabelVersion, error)
	// FindLabelVersion returns the account's version id, whatever its label.
	// Codes: NOT_FOUND.
	FindLabelVersion(ctx context.Context, accountID, id string) (*LabelVersion, error)
	// ListLabelVersions returns up to limit versions of the label in
	// (sequentialVersion, id) order, after the cursor when it is set.
	ListLabelVersions(ctx context.Context, accountID, labelID string, after *LabelVersionCursor, limit int) ([]*LabelVersion, error)
}

// Label version limits (docs/api.md#limits and openapi.yaml).
const (
	MaxLabelVersionBlobBytes = 1 << 20
	MaxGlobalContextLength   = 65536
)

// Validate checks the options that the schema cannot.
func (o LabelEvalOptions) Validate(field string) error {
	if o.Threshold != nil && (*o.Threshold < 0 || *o.Threshold > 1) {
		return InvalidField(field+".threshold", "must be between 0 and 1")
	}
	if o.BundleSize != nil && (*o.BundleSize < 0 || *o.BundleSize > 100) {
		return InvalidField(field+".bundleSize", "must be between 0 and 100")
	}
	if o.ImageDetailLevel != nil {
		switch *o.ImageDetailLevel {
		case "IMAGE_DETAIL_LEVEL_UNSPECIFIED", "IMAGE_DETAIL_LEVEL_LOW", "IMAGE_DETAIL_LEVEL_HIGH":
		default:
			return InvalidField(field+".imageDetailLevel", "unknown value")
		}
	}
	return nil
}
