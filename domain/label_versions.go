package domain

import (
	"context"
	"errors"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
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

// Label version limits (DESIGN §10 and openapi.yaml).
const (
	MaxLabelVersionBlobBytes = 1 << 20
	MaxGlobalContextLength   = 65536
)

// NewLabelVersion is the input of CreateLabelVersion.
type NewLabelVersion struct {
	Text                 string
	Blob                 []byte
	Description          string
	EvalOptions          LabelEvalOptions
	GlobalContext        string
	ParentLabelVersionID string
	CreatedByID          string
}

// LabelVersionPage is one page of ListLabelVersions.
type LabelVersionPage struct {
	Versions      []*LabelVersion
	NextPageToken string
}

// validate checks the options that the schema cannot.
func (o LabelEvalOptions) validate(field string) error {
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

// CompileLabelText compiles a label version's text for the label name. A
// compile failure is INVALID_ARGUMENT with a CompilationErrors detail listing
// every error with its line and column.
func CompileLabelText(labelName, text string) (*rules.Plan, error) {
	plan, err := rules.Compile(text, rules.CompileOptions{LabelName: labelName})
	if err == nil {
		return plan, nil
	}
	var ce *rules.CompileErrors
	if !errors.As(err, &ce) {
		return nil, err
	}
	detail := CompilationErrors{Errors: make([]CompilationError, 0, len(ce.Errors))}
	for _, e := range ce.Errors {
		detail.Errors = append(detail.Errors, CompilationError{Message: e.Message, Line: e.Line, Column: e.Column})
	}
	msg := "the rule text does not compile"
	if len(ce.Errors) > 0 {
		e := ce.Errors[0]
		msg = "the rule text does not compile: " + e.Error()
	}
	return nil, &Error{Code: InvalidArgument, Message: msg, Details: []Detail{detail}}
}

// CreateLabelVersion compiles the text and publishes it as the label's next
// version. Codes: INVALID_ARGUMENT (compile errors with line and column,
// limits, a parent that is not a version of this label), NOT_FOUND (label).
func (s *LabelService) CreateLabelVersion(ctx context.Context, accountID, labelID string, in NewLabelVersion) (*LabelVersion, error) {
	label, err := s.labels.GetLabel(ctx, accountID, labelID)
	if err != nil {
		return nil, err
	}
	switch {
	case len(in.Blob) > MaxLabelVersionBlobBytes:
		return nil, InvalidField("blob", "must be at most 1 MiB")
	case len([]rune(in.GlobalContext)) > MaxGlobalContextLength:
		return nil, InvalidField("globalContext", "must be at most 65536 characters")
	}
	if err := validateLabelDescription(in.Description); err != nil {
		return nil, err
	}
	if err := in.EvalOptions.validate("labelEvalOptions"); err != nil {
		return nil, err
	}
	plan, err := CompileLabelText(label.Name, in.Text)
	if err != nil {
		return nil, err
	}
	st := plan.StatsWithGlobalContext(in.GlobalContext)
	v := &LabelVersion{
		ID:                   NewID(),
		LabelID:              label.ID,
		AccountID:            accountID,
		Text:                 in.Text,
		Blob:                 in.Blob,
		Description:          in.Description,
		GlobalContext:        in.GlobalContext,
		ParentLabelVersionID: in.ParentLabelVersionID,
		CreatedByID:          in.CreatedByID,
		EvalOptions:          in.EvalOptions,
		SignalCount:          st.SignalCount,
		TotalSignalTokens:    st.TotalSignalTokens,
		ComplexityScore:      st.ComplexityScore,
		TokenCounts: LabelTokenCounts{
			DSLTokenCount:        st.TokenCounts.DSLTokenCount,
			GlobalContextTokens:  st.TokenCounts.GlobalContextTokens,
			SignalTokens:         st.TokenCounts.SignalTokens,
			SignalSpecialTokens:  st.TokenCounts.SignalSpecialTokens,
			ContentSpecialTokens: st.TokenCounts.ContentSpecialTokens,
		},
		Created: s.clock.Now(),
	}
	if err := s.versions.CreateLabelVersion(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

// GetLabelVersion returns one version of a label of the account.
// Codes: NOT_FOUND.
func (s *LabelService) GetLabelVersion(ctx context.Context, accountID, labelID, id string) (*LabelVersion, error) {
	return s.versions.GetLabelVersion(ctx, accountID, labelID, id)
}

// ListLabelVersions returns one page of a label's versions, by
// sequentialVersion ascending then id. Codes: NOT_FOUND (label),
// INVALID_ARGUMENT (negative page_size, page_token of another request).
func (s *LabelService) ListLabelVersions(ctx context.Context, accountID, labelID string, pageSize *int32, pageToken string) (*LabelVersionPage, error) {
	q := PageQuery{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: DefaultLabelPageSize, Max: MaxLabelPageSize, Scope: "listLabelVersions\x00" + accountID + "\x00" + labelID}
	check := func() error {
		_, err := s.labels.GetLabel(ctx, accountID, labelID)
		return err
	}
	vs, next, err := keysetPage(s.tokens, q, check, func(after *LabelVersionCursor, limit int) ([]*LabelVersion, error) {
		return s.versions.ListLabelVersions(ctx, accountID, labelID, after, limit)
	}, func(v *LabelVersion) LabelVersionCursor {
		return LabelVersionCursor{Seq: v.SequentialVersion, ID: v.ID}
	})
	if err != nil {
		return nil, err
	}
	return &LabelVersionPage{Versions: vs, NextPageToken: next}, nil
}
