package labels

import (
	"context"
	"errors"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/rules"
)

// NewLabelVersion is the input of CreateLabelVersion.
type NewLabelVersion struct {
	Text                 string
	Blob                 []byte
	Description          string
	EvalOptions          domain.LabelEvalOptions
	GlobalContext        string
	ParentLabelVersionID string
	CreatedByID          string
}

// LabelVersionPage is one page of ListLabelVersions.
type LabelVersionPage struct {
	Versions      []*domain.LabelVersion
	NextPageToken string
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
	detail := domain.CompilationErrors{Errors: make([]domain.CompilationError, 0, len(ce.Errors))}
	for _, e := range ce.Errors {
		detail.Errors = append(detail.Errors, domain.CompilationError{Message: e.Message, Line: e.Line, Column: e.Column})
	}
	msg := "the rule text does not compile"
	if len(ce.Errors) > 0 {
		e := ce.Errors[0]
		msg = "the rule text does not compile: " + e.Error()
	}
	return nil, &domain.Error{Code: domain.InvalidArgument, Message: msg, Details: []domain.Detail{detail}}
}

// CreateLabelVersion compiles the text and publishes it as the label's next
// version. Codes: INVALID_ARGUMENT (compile errors with line and column,
// limits, a parent that is not a version of this label), NOT_FOUND (label).
func (s *Service) CreateLabelVersion(ctx context.Context, accountID, labelID string, in NewLabelVersion) (*domain.LabelVersion, error) {
	label, err := s.labels.GetLabel(ctx, accountID, labelID)
	if err != nil {
		return nil, err
	}
	switch {
	case len(in.Blob) > domain.MaxLabelVersionBlobBytes:
		return nil, domain.InvalidField("blob", "must be at most 1 MiB")
	case len([]rune(in.GlobalContext)) > domain.MaxGlobalContextLength:
		return nil, domain.InvalidField("globalContext", "must be at most 65536 characters")
	}
	if err := validateLabelDescription(in.Description); err != nil {
		return nil, err
	}
	if err := in.EvalOptions.Validate("labelEvalOptions"); err != nil {
		return nil, err
	}
	if in.EvalOptions.Stack != nil {
		if err := evaluation.CheckStack(s.backends, "labelEvalOptions.stack", *in.EvalOptions.Stack); err != nil {
			return nil, err
		}
	}
	plan, err := CompileLabelText(label.Name, in.Text)
	if err != nil {
		return nil, err
	}
	st := plan.StatsWithGlobalContext(in.GlobalContext)
	v := &domain.LabelVersion{
		ID:                   domain.NewID(),
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
		TokenCounts: domain.LabelTokenCounts{
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
func (s *Service) GetLabelVersion(ctx context.Context, accountID, labelID, id string) (*domain.LabelVersion, error) {
	return s.versions.GetLabelVersion(ctx, accountID, labelID, id)
}

// ListLabelVersions returns one page of a label's versions, by
// sequentialVersion ascending then id. Codes: NOT_FOUND (label),
// INVALID_ARGUMENT (negative page_size, page_token of another request).
func (s *Service) ListLabelVersions(ctx context.Context, accountID, labelID string, pageSize *int32, pageToken string) (*LabelVersionPage, error) {
	q := paging.Query{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: domain.DefaultLabelPageSize, Max: domain.MaxLabelPageSize, Scope: "listLabelVersions\x00" + accountID + "\x00" + labelID}
	check := func() error {
		_, err := s.labels.GetLabel(ctx, accountID, labelID)
		return err
	}
	vs, next, err := paging.Keyset(s.tokens, q, check, func(after *domain.LabelVersionCursor, limit int) ([]*domain.LabelVersion, error) {
		return s.versions.ListLabelVersions(ctx, accountID, labelID, after, limit)
	}, func(v *domain.LabelVersion) domain.LabelVersionCursor {
		return domain.LabelVersionCursor{Seq: v.SequentialVersion, ID: v.ID}
	})
	if err != nil {
		return nil, err
	}
	return &LabelVersionPage{Versions: vs, NextPageToken: next}, nil
}
