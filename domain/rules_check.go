package domain

import "github.com/contenteval/contenteval/domain/rules"

// RulesCheck is the outcome of a compile dry run (POST /v1/rules/check): every
// compile error of a rule text or, when it has none, the figures the version
// would be published with.
type RulesCheck struct {
	Errors []CompilationError
	Stats  *rules.Stats // nil when Errors is not empty
}
