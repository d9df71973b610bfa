package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/contenteval/contenteval/domain/rules"
	"github.com/spf13/cobra"
)

const rulesUsage = `usage:
  contenteval rules check FILE [--label NAME]
  contenteval rules eval FILE (--text TEXT | --text-file PATH) [--threshold T] [--label NAME] [--expedited] [--count-tokens]
                              [--backend NAME [--backends-file FILE] [--global-context TEXT]]

check prints every compile error as FILE:LINE:COL: message (exit 1), or "ok".
eval prints the evaluation report as JSON. --label compiles FILE as a label version
named NAME instead of a policy document. --backend scores concept, question and
context signals with that model backend of the backends file (default
$CONTENTEVAL_BACKENDS_FILE).
`

// rulesFlags are the flags of rules check and rules eval.
type rulesFlags struct {
	label, text, textFile, backend, backendsFile, globalContext string
	threshold                                                   float64
	expedited, countTokens                                      bool
}

// rulesCommand implements `contenteval rules check|eval`. Exit codes: 0
// success, 1 compile or evaluation failure, 2 usage error.
func (c *command) rulesCommand() *cobra.Command {
	var f rulesFlags
	oneFile := func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return errors.New("expected one FILE")
		}
		return nil
	}
	checkFS := newFlagSet("rules check")
	checkFS.StringVar(&f.label, "label", "", "compile FILE as a label version with this name")
	check := &cobra.Command{Use: "check FILE [--label NAME]", Short: "print every compile error of a rule file, or ok", Args: oneFile,
		RunE: c.action(func(_ *cobra.Command, args []string) int { return c.rules("check", args[0], &f) })}
	evalFS := newFlagSet("rules eval")
	evalFS.StringVar(&f.label, "label", "", "compile FILE as a label version with this name")
	evalFS.StringVar(&f.text, "text", "", "text to evaluate")
	evalFS.StringVar(&f.textFile, "text-file", "", "file holding the text to evaluate")
	evalFS.Float64Var(&f.threshold, "threshold", 0, "threshold in (0, 1]; 0 means 0.5")
	evalFS.BoolVar(&f.expedited, "expedited", false, "bill as expedited")
	evalFS.BoolVar(&f.countTokens, "count-tokens", false, "report the BPE token count of the text as input tokens")
	evalFS.StringVar(&f.backend, "backend", "", "score concept, question and context signals with this model backend")
	evalFS.StringVar(&f.backendsFile, "backends-file", c.getenv("CONTENTEVAL_BACKENDS_FILE"), "the backends file --backend names a backend of ($CONTENTEVAL_BACKENDS_FILE)")
	evalFS.StringVar(&f.globalContext, "global-context", "", "context about the content, for the model's prompt")
	eval := &cobra.Command{Use: "eval FILE (--text TEXT | --text-file PATH)", Short: "evaluate a text against a rule file and print the report as JSON", Args: oneFile,
		RunE: c.action(func(_ *cobra.Command, args []string) int { return c.rules("eval", args[0], &f) })}
	g := c.group("rules", "check and evaluate rule files", withGoFlags(check, checkFS), withGoFlags(eval, evalFS))
	g.Long = rulesUsage
	return g
}

// rules compiles file and, for eval, evaluates the text of f against it.
func (c *command) rules(sub, file string, f *rulesFlags) int {
	ctx, stdout, stderr := c.ctx, c.stdout, c.stderr
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "contenteval rules: %v\n", err)
		return 1
	}
	plan, err := rules.Compile(string(src), rules.CompileOptions{LabelName: f.label})
	if err != nil {
		var ce *rules.CompileErrors
		if errors.As(err, &ce) {
			for _, e := range ce.Errors {
				fmt.Fprintf(stdout, "%s:%d:%d: %s\n", file, e.Line, e.Column, e.Message)
			}
			return 1
		}
		fmt.Fprintf(stderr, "contenteval rules: %v\n", err)
		return 1
	}
	if sub == "check" {
		fmt.Fprintln(stdout, "ok")
		return 0
	}
	content := f.text
	if f.textFile != "" {
		if content != "" {
			fmt.Fprintln(stderr, "contenteval rules eval: give --text or --text-file, not both")
			return 2
		}
		b, err := os.ReadFile(f.textFile)
		if err != nil {
			fmt.Fprintf(stderr, "contenteval rules: %v\n", err)
			return 1
		}
		content = string(b)
	}
	opts := rules.EvalOptions{Threshold: f.threshold, Expedited: f.expedited, CountTokens: f.countTokens, GlobalContext: f.globalContext}
	if f.backend != "" {
		reg, code := loadBackends(f.backendsFile, stderr)
		if reg == nil {
			return code
		}
		if _, ok := reg.Backend(f.backend); !ok {
			fmt.Fprintf(stderr, "contenteval rules eval: --backend %q is not in %s (it has %v)\n", f.backend, f.backendsFile, reg.Stacks())
			return 2
		}
		opts.Evaluator = reg.Evaluator(f.backend, f.expedited)
	}
	rep, err := plan.Evaluate(ctx, rules.Content{Text: content, Modality: "text"}, opts)
	if err != nil {
		fmt.Fprintf(stderr, "contenteval rules: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(toReportJSON(rep)); err != nil {
		fmt.Fprintf(stderr, "contenteval rules: %v\n", err)
		return 1
	}
	return 0
}

// The JSON shapes below follow the API's EvaluationReport (camelCase, 64-bit
// integers as decimal strings); they live here because only the CLI prints reports
// without going through the API's generated types.

type reportJSON struct {
	Result                    string             `json:"result"`
	SectionEvaluationReports  []sectionJSON      `json:"sectionEvaluationReports"`
	ExceptionEvaluationReport *exceptionJSON     `json:"exceptionEvaluationReport,omitempty"`
	LabelMatches              map[string]float64 `json:"labelMatches"`
	Threshold                 float64            `json:"threshold"`
	TokenUsage                tokenUsageJSON     `json:"tokenUsage"`
}

type sectionJSON struct {
	Name                       string          `json:"name"`
	Result                     string          `json:"result"`
	Message                    string          `json:"message"`
	AssertionEvaluationReports []assertionJSON `json:"assertionEvaluationReports"`
	ExceptionEvaluationReport  *exceptionJSON  `json:"exceptionEvaluationReport,omitempty"`
	ReviewResult               reviewJSON      `json:"reviewResult"`
	Matches                    []spanJSON      `json:"matches,omitempty"`
}

type assertionJSON struct {
	Result  string            `json:"result"`
	Message string            `json:"message"`
	Score   float64           `json:"score"`
	Spans   []flaggedSpanJSON `json:"spans,omitempty"`
}

// flaggedSpanJSON is the API's FlaggedSpan: code points of the evaluated text.
type flaggedSpanJSON struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
}

type exceptionJSON struct {
	Result                     string          `json:"result"`
	AssertionEvaluationReports []assertionJSON `json:"assertionEvaluationReports"`
	ReviewResult               reviewJSON      `json:"reviewResult"`
}

type reviewJSON struct {
	Outcome string  `json:"outcome"`
	Score   float64 `json:"score"`
}

type spanJSON struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type tokenUsageJSON struct {
	InputTokens  string  `json:"inputTokens"`
	BilledTokens string  `json:"billedTokens"`
	Multiplier   float64 `json:"multiplier"`
}

func toReportJSON(r *rules.Report) reportJSON {
	out := reportJSON{
		Result:                    string(r.Result),
		SectionEvaluationReports:  make([]sectionJSON, 0, len(r.Sections)),
		ExceptionEvaluationReport: toExceptionJSON(r.Exception),
		LabelMatches:              r.LabelMatches,
		Threshold:                 r.Threshold,
		TokenUsage: tokenUsageJSON{
			InputTokens:  strconv.FormatInt(r.TokenUsage.InputTokens, 10),
			BilledTokens: strconv.FormatInt(r.TokenUsage.BilledTokens, 10),
			Multiplier:   r.TokenUsage.Multiplier,
		},
	}
	for _, s := range r.Sections {
		sj := sectionJSON{
			Name: s.Name, Result: string(s.Result), Message: s.Message,
			AssertionEvaluationReports: toAssertionsJSON(s.Assertions),
			ExceptionEvaluationReport:  toExceptionJSON(s.Exception),
			ReviewResult:               reviewJSON{Outcome: string(s.Review.Outcome), Score: s.Review.Score},
		}
		for _, m := range s.Matches {
			sj.Matches = append(sj.Matches, spanJSON{Start: m.Start, End: m.End})
		}
		out.SectionEvaluationReports = append(out.SectionEvaluationReports, sj)
	}
	return out
}

func toAssertionsJSON(as []rules.AssertionReport) []assertionJSON {
	out := make([]assertionJSON, 0, len(as))
	for _, a := range as {
		aj := assertionJSON{Result: string(a.Result), Message: a.Message, Score: a.Score}
		for _, s := range a.FlaggedSpans() {
			aj.Spans = append(aj.Spans, flaggedSpanJSON{Start: s.Start, End: s.End, Text: s.Text})
		}
		out = append(out, aj)
	}
	return out
}

func toExceptionJSON(e *rules.ExceptionReport) *exceptionJSON {
	if e == nil {
		return nil
	}
	return &exceptionJSON{
		Result:                     string(e.Result),
		AssertionEvaluationReports: toAssertionsJSON(e.Assertions),
		ReviewResult:               reviewJSON{Outcome: string(e.Review.Outcome), Score: e.Review.Score},
	}
}
