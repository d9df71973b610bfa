package policies

import (
	"errors"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// CheckText is the compile dry run of a policy document: compiled as Create and
// AddVersion compile it, within the same text limit, and nothing stored.
// Codes: INVALID_ARGUMENT (text over the limit).
func (s *Service) CheckText(text string) (*domain.RulesCheck, error) {
	return CheckRules(text, rules.CompileOptions{}, s.cfg.MaxTextBytes)
}

// CheckRules compiles text with opts, as publishing a version with those options
// does, and keeps nothing but the outcome. Text longer than maxTextBytes is
// INVALID_ARGUMENT naming the field "text", before anything is compiled; every
// other bound (rules, signals, nesting, REGEX cost) is the compiler's, reported
// as compile errors. Codes: INVALID_ARGUMENT.
func CheckRules(text string, opts rules.CompileOptions, maxTextBytes int) (*domain.RulesCheck, error) {
	if len(text) > maxTextBytes {
		return nil, domain.InvalidField("text", "is longer than the limit of "+strconv.Itoa(maxTextBytes)+" bytes")
	}
	opts.Limits.MaxTextBytes = maxTextBytes
	plan, err := rules.Compile(text, opts)
	var ce *rules.CompileErrors
	switch {
	case errors.As(err, &ce):
		out := &domain.RulesCheck{Errors: make([]domain.CompilationError, len(ce.Errors))}
		for i, e := range ce.Errors {
			out.Errors[i] = domain.CompilationError{Message: e.Message, Line: e.Line, Column: e.Column}
		}
		return out, nil
	case err != nil:
		return nil, err
	}
	st := plan.Stats()
	return &domain.RulesCheck{Errors: []domain.CompilationError{}, Stats: &st}, nil
}
