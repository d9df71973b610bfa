package domain

import (
	"errors"
	"strconv"

	"github.com/contenteval/contenteval/domain/rules"
)

// RulesCheck is the outcome of a compile dry run (POST /v1/rules/check): every
// compile error of a rule text or, when it has none, the figures the version
// would be published with.
type RulesCheck struct {
	Errors []CompilationError
	Stats  *rules.Stats // nil when Errors is not empty
}

// CheckRules compiles text with opts, as publishing a version with those options
// does, and keeps nothing but the outcome. Text longer than maxTextBytes is
// INVALID_ARGUMENT naming the field "text", before anything is compiled; every
// other bound (rules, signals, nesting, REGEX cost) is the compiler's, reported
// as compile errors. Codes: INVALID_ARGUMENT.
func CheckRules(text string, opts rules.CompileOptions, maxTextBytes int) (*RulesCheck, error) {
	if len(text) > maxTextBytes {
		return nil, InvalidField("text", "is longer than the limit of "+strconv.Itoa(maxTextBytes)+" bytes")
	}
	opts.Limits.MaxTextBytes = maxTextBytes
	plan, err := rules.Compile(text, opts)
	var ce *rules.CompileErrors
	switch {
	case errors.As(err, &ce):
		out := &RulesCheck{Errors: make([]CompilationError, len(ce.Errors))}
		for i, e := range ce.Errors {
			out.Errors[i] = CompilationError{Message: e.Message, Line: e.Line, Column: e.Column}
		}
		return out, nil
	case err != nil:
		return nil, err
	}
	st := plan.Stats()
	return &RulesCheck{Errors: []CompilationError{}, Stats: &st}, nil
}
