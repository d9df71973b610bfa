package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/gen"
)

// CheckRules compiles rule text as a policy or a label version would be, for
// editors, and lists every compile error; both account types.
func (s *Server) CheckRules(_ context.Context, req gen.CheckRulesRequestObject) (gen.CheckRulesResponseObject, error) {
	var check *domain.RulesCheck
	var err error
	if req.Body.Kind == gen.RULESKINDLABEL {
		check, err = labels.CheckLabelText(req.Body.Text)
	} else {
		check, err = s.deps.Policies.CheckText(req.Body.Text)
	}
	if err != nil {
		return nil, err
	}
	out := gen.CheckRules200JSONResponse{Errors: make([]gen.RuleCheckError, len(check.Errors))}
	for i, e := range check.Errors {
		out.Errors[i] = gen.RuleCheckError{Message: e.Message, Line: int32(e.Line), Column: int32(e.Column)}
	}
	if st := check.Stats; st != nil {
		out.SignalCount = ptr(int32(st.SignalCount))
		out.ComplexityScore = ptr(st.ComplexityScore)
		out.TokenCountsV2 = ptr(toAPITokenCounts(st.TokenCounts))
	}
	return out, nil
}
