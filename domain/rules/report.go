package rules

// Outcome is the result of a section, an assertion, an exception or a whole evaluation.
type Outcome string

// The outcomes of docs/rules.md#scores-and-outcomes.
const (
	// OutcomeUnspecified is never produced by Evaluate; it is the zero value of the
	// wire enum.
	OutcomeUnspecified Outcome = "OUTCOME_UNSPECIFIED"
	// OutcomeFalse: evaluated, and the score is below the threshold (or an exception
	// fired, or a higher-priority label won).
	OutcomeFalse Outcome = "OUTCOME_FALSE"
	// OutcomeTrue: evaluated, and the score reached the threshold.
	OutcomeTrue Outcome = "OUTCOME_TRUE"
	// OutcomeFailed: the decision depends on a signal that could not be evaluated
	// (score -1): never reported as a silent FALSE.
	OutcomeFailed Outcome = "OUTCOME_FAILED"
)

// Report is the domain form of an EvaluationReport.
type Report struct {
	Result   Outcome
	Sections []SectionReport // in document order
	// Exception is the document-level exception (EXCEPT WHEN at top level), nil when
	// the document has none.
	Exception *ExceptionReport
	// LabelMatches maps the name of each TRUE section to its score.
	LabelMatches map[string]float64
	Threshold    float64
	TokenUsage   TokenUsage
	// SpansTruncated is set when the flagged spans of the report are not
	// all there are: a bound of spans.go left some out, or a signal of a
	// TRUE rule matched more often than the evaluator locates. Only spans
	// are ever left out: outcomes, scores and assertions are complete.
	SpansTruncated bool `json:",omitempty"`
	// HitsTruncated is set on the report of a video or audio item whose
	// timed hits are not all there are (the bounds of
	// evaluation.LimitTimedHits). Only hits are left out.
	HitsTruncated bool `json:",omitempty"`
	// Precheck lists the hash-list matches that let the content through
	// (SHADOW lists), each once however many frames showed it.
	Precheck []PrecheckMatch `json:",omitempty"`
}

// PrecheckMatch is a hash-list match recorded without rejecting the
// content: which list and hash, how near, and for a video or an animated
// image the time range of the first frame that matched.
type PrecheckMatch struct {
	ListID, ListName string
	Kind             string // md5, sha1 or pdq
	Hash             string // the list's hash that matched
	Distance         int
	Confidence       string
	Source, Note     string
	Frame            *FrameTime `json:",omitempty"`
}

// FrameTime is the time range a frame is shown, in milliseconds.
type FrameTime struct {
	StartMs, EndMs int64
}

// SectionReport is the evaluation of one LABEL/SECTION block.
type SectionReport struct {
	Name    string
	Message string // the string after the label name
	Result  Outcome
	Score   float64 // max over the rules, -1 when failed
	// Assertions has one entry per rule, in source order.
	Assertions []AssertionReport
	// Exception is the label's own exception; when it has none and the
	// document-level exception fired, that one is repeated here so the section
	// explains itself.
	Exception *ExceptionReport
	Review    ReviewResult
	// Matches are the byte ranges of the text that made the section's rules fire, for
	// highlighting by the command line. Empty when nothing fired or the signals have no
	// position. Bounded like flagged spans: at most MaxSpansPerHit per section and
	// MaxSpansPerReport per report, the earliest in the text.
	Matches []Span
}

// AssertionReport is the evaluation of one rule.
type AssertionReport struct {
	Result  Outcome
	Message string // the rule as written; "(lexical match)" is appended when a concept was matched lexically
	Score   float64
	// Spans are where the rule's signals matched the text when the rule is TRUE,
	// nil when it flagged nothing (spans.go). A pointer, because a slice would make
	// every assertion half as large again, and the reports of large policies
	// copy thousands of them per evaluation (a tenth more CPU, measured).
	Spans *[]TextSpan `json:",omitempty"`
}

// FlaggedSpans returns the assertion's spans (nil when it has none).
func (a *AssertionReport) FlaggedSpans() []TextSpan {
	if a.Spans == nil {
		return nil
	}
	return *a.Spans
}

// ExceptionReport is the evaluation of an EXCEPT WHEN / UNLESS block.
type ExceptionReport struct {
	Result     Outcome // TRUE when the exception fired
	Assertions []AssertionReport
	Review     ReviewResult
}

// ReviewResult is the outcome a reviewer is asked to confirm. The engine fills it with
// its own decision; a human review replaces it later.
type ReviewResult struct {
	Outcome Outcome
	Score   float64
}

// Span is a byte range [Start, End) of the evaluated text.
type Span struct {
	Start, End int
}

// TokenUsage is what an evaluation consumed, for billing.
type TokenUsage struct {
	InputTokens  int64
	BilledTokens int64
	Multiplier   float64
}
