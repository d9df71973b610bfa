package domain

import (
	"fmt"
	"strings"

	"github.com/contenteval/contenteval/domain/rules"
)

// SignalBackends are the model backends of the server (DESIGN §11): the
// stack an evaluation names chooses the evaluator of its concept, question
// and context signals. The modelbackend adapter implements it; a server
// without a backends file has none (nil), and evaluates with the built-in
// evaluators.
type SignalBackends interface {
	// KnownStack reports whether name may be used: "" (the default),
	// "builtin", or a configured backend.
	KnownStack(name string) bool
	// Stacks lists the configured backends.
	Stacks() []string
	// Evaluator returns the evaluator of stack ("" is the default), or nil
	// for the built-in evaluators.
	Evaluator(stack string, expedited bool) rules.SignalEvaluator
}

// BuiltinStack names the built-in evaluators as a stack.
const BuiltinStack = "builtin"

// MaxStackLength bounds a stack name.
const MaxStackLength = 200

// CheckStack refuses a stack name the server cannot evaluate with, when the
// version or job naming it is created: field names it in the error.
func CheckStack(b SignalBackends, field, stack string) error {
	switch {
	case stack == "" || stack == BuiltinStack:
		return nil
	case len(stack) > MaxStackLength:
		return InvalidField(field, fmt.Sprintf("must be at most %d characters", MaxStackLength))
	case b == nil:
		return InvalidField(field, fmt.Sprintf("names model backend %q, but this server has no model backends (only %q)", stack, BuiltinStack))
	case !b.KnownStack(stack):
		return InvalidField(field, fmt.Sprintf("names model backend %q, which this server does not have; it has %s", stack,
			strings.Join(append(b.Stacks(), BuiltinStack), ", ")))
	}
	return nil
}

// EvaluatorFor is b's evaluator of stack, nil (built-in) without backends.
func EvaluatorFor(b SignalBackends, stack string, expedited bool) rules.SignalEvaluator {
	if b == nil {
		return nil
	}
	return b.Evaluator(stack, expedited)
}

// StackOption is the option key of a job's stack: options.options.stack.
const StackOption = "stack"
