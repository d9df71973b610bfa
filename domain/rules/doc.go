// Package rules implements the rule language of RULES.md: a lexer and parser that
// report every compile error with its line and column, a compiler that turns a policy
// document or a label version into an immutable Plan, and an evaluator that scores
// content against a Plan and explains each decision in a Report.
//
// The package is pure domain code. It imports no other package of this project, does no
// I/O and needs no network: every built-in evaluator (exact, fuzzy, regex, sentiment,
// lexical concept, hash) and the BPE tokenizer work from data embedded in the binary.
// Signals that need a model (questions, and concepts when better than lexical matching is
// wanted) go through the SignalEvaluator seam, which a model backend implements.
//
// A Plan is safe for concurrent use: Evaluate keeps all per-content state on the stack of
// the call, so one compiled policy can serve every request of a version.
package rules
