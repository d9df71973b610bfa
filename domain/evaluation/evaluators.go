package evaluation

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// EvaluateFunc evaluates extracted content: with a policy version's plan
// (PolicyEvaluator), or a label version's (LabelEvaluator).
type EvaluateFunc func(ctx context.Context, c rules.Content) (*rules.Report, error)

// EvaluatorFor is b's evaluator of stack, nil (built-in) without backends.
func EvaluatorFor(b domain.SignalBackends, stack string, expedited bool) rules.SignalEvaluator {
	if b == nil {
		return nil
	}
	return b.Evaluator(stack, expedited)
}

// PolicyEvaluator is the EvaluateFunc of a job's policy version, whose plan
// is given, its concept, question and context signals scored by the model
// backend the job's options name (options.options.stack; none: the default
// backend, if any).
func PolicyEvaluator(plan *rules.Plan, j *domain.Job, backends domain.SignalBackends) EvaluateFunc {
	opts := rules.EvalOptions{Threshold: j.Threshold, Expedited: j.Expedited, Account: j.AccountID,
		Evaluator: EvaluatorFor(backends, j.Options[domain.StackOption], j.Expedited)}
	return func(ctx context.Context, c rules.Content) (*rules.Report, error) {
		return plan.Evaluate(ctx, c, opts)
	}
}

// LabelSettings are the effective settings of one evaluation of a label
// version (LabelSettingsOf). They are part of the key of a cached report
// (ReportKey), hence the short JSON names.
type LabelSettings struct {
	Threshold        float64 `json:"t"`
	GlobalContext    string  `json:"g"`
	Expedited        bool    `json:"e"`
	BundleSize       int32   `json:"b"`
	Stack            string  `json:"s"`
	ImageDetailLevel string  `json:"i"`
	// LabelName is the label's current name: the version's section takes it.
	LabelName string `json:"n"`
}

// LabelOverrides are what one evaluation sets over a label version's own
// settings; the zero value takes the version's.
type LabelOverrides struct {
	// Threshold wins over the options' and the version's (0 counts as
	// unset, as for jobs).
	Threshold *float64
	// Options override the version's evaluation options one by one.
	Options *domain.LabelEvalOptions
	// GlobalContext replaces the version's when not empty.
	GlobalContext string
}

// LabelSettingsOf applies the precedence of a label version's settings
// (docs/api.md#label-evaluation): the override's threshold > its options'
// > the version's > 0.5; the override's global context replaces the
// version's; the other options override the version's one by one. bypass
// says whether cached reports and signals are to be bypassed.
func LabelSettingsOf(v *domain.LabelVersion, labelName string, o LabelOverrides) (st LabelSettings, bypass bool) {
	call := domain.LabelEvalOptions{}
	if o.Options != nil {
		call = *o.Options
	}
	ver := v.EvalOptions
	st = LabelSettings{Threshold: rules.DefaultThreshold, GlobalContext: v.GlobalContext, LabelName: labelName}
	for _, t := range []*float64{o.Threshold, call.Threshold, ver.Threshold} {
		if t != nil && *t > 0 {
			st.Threshold = *t
			break
		}
	}
	if o.GlobalContext != "" {
		st.GlobalContext = o.GlobalContext
	}
	st.Expedited = firstOr(call.Expedited, ver.Expedited, false)
	st.BundleSize = firstOr(call.BundleSize, ver.BundleSize, 0)
	st.Stack = firstOr(call.Stack, ver.Stack, "")
	st.ImageDetailLevel = firstOr(call.ImageDetailLevel, ver.ImageDetailLevel, "")
	return st, firstOr(call.BypassCache, ver.BypassCache, false)
}

func firstOr[T any](first, second *T, def T) T {
	if first != nil {
		return *first
	}
	if second != nil {
		return *second
	}
	return def
}

// ReportKey is the key of the report of content (by its hash) evaluated
// against version versionID with st: the version belongs to one account,
// so the key never matches another account's evaluation. "" when the
// content has no hash.
func (st LabelSettings) ReportKey(contentHash, versionID string) string {
	if contentHash == "" {
		return ""
	}
	b, _ := json.Marshal(st) // strings, numbers and booleans: cannot fail
	return contentHash + "\x00" + versionID + "\x00" + strconv.FormatFloat(st.Threshold, 'g', -1, 64) + "\x00" + string(b)
}

// LabelEvaluator is the EvaluateFunc of label version v with the settings
// st, its plan from plans; bypass asks the signal evaluators for fresh
// answers. Codes: those of compiling the version's text.
func LabelEvaluator(plans *Plans, v *domain.LabelVersion, st LabelSettings, bypass bool, backends domain.SignalBackends) (EvaluateFunc, error) {
	plan, err := plans.Label(v, st.LabelName)
	if err != nil {
		return nil, err
	}
	opts := rules.EvalOptions{Threshold: st.Threshold, Expedited: st.Expedited, GlobalContext: st.GlobalContext,
		Evaluator: EvaluatorFor(backends, st.Stack, st.Expedited), Account: v.AccountID, BypassCache: bypass}
	return func(ctx context.Context, c rules.Content) (*rules.Report, error) {
		return plan.Evaluate(ctx, c, opts)
	}, nil
}

// LabelSection returns the section of a label version's report: the one
// named after the label, or the only one; nil otherwise.
func LabelSection(rep *rules.Report, name string) *rules.SectionReport {
	for i := range rep.Sections {
		if rep.Sections[i].Name == name {
			return &rep.Sections[i]
		}
	}
	if len(rep.Sections) == 1 {
		return &rep.Sections[0]
	}
	return nil
}
