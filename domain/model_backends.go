package domain

import (
	"github.com/contenteval/contenteval/domain/rules"
)

// SignalBackends are the model backends of the server (docs/operations.md#model-backends): the
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

// StackOption is the option key of a job's stack: options.options.stack.
const StackOption = "stack"
