package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/contenteval/contenteval/domain/rules"
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

// runRules implements `contenteval rules check|eval`. Exit codes: 0 success, 1 compile
// or evaluation failure, 2 usage error.
func runRules(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, rulesUsage)
		return 2
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("rules "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, rulesUsage) }
	label := fs.String("label", "", "compile FILE as a label version with this name")
	var text, textFile *string
	var threshold *float64
	var expedited, countTokens *bool
	var backend, backendsFile, globalContext *string
	switch sub {
	case "check":
	case "eval":
		text = fs.String("text", "", "text to evaluate")
		textFile = fs.String("text-file", "", "file holding the text to evaluate")
		threshold = fs.Float64("threshold", 0, "threshold in (0, 1]; 0 means 0.5")
		expedited = fs.Bool("expedited", false, "bill as expedited")
		countTokens = fs.Bool("count-tokens", false, "report the BPE token count of the text as input tokens")
		backend = fs.String("backend", "", "score concept, question and context signals with this model backend")
		backendsFile = fs.String("backends-file", getenv("CONTENTEVAL_BACKENDS_FILE"), "the backends file --backend names a backend of")
		globalContext = fs.String("global-context", "", "context about the content, for the model's prompt")
	case "-h", "--help", "help":
		fmt.Fprint(stdout, rulesUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "contenteval rules: unknown subcommand %q\n%s", sub, rulesUsage)
		return 2
	}
	// The file comes first in the documented usage, and flag stops at the first
	// positional argument, so parse around positionals.
	var positional []string
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintf(stderr, "contenteval rules %s: expected one FILE\n%s", sub, rulesUsage)
		return 2
	}
	file := positional[0]
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "contenteval rules: %v\n", err)
		return 1
	}
	plan, err := rules.Compile(string(src), rules.CompileOptions{LabelName: *label})
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
	content := *text
	if *textFile != "" {
		if content != "" {
			fmt.Fprintln(stderr, "contenteval rules eval: give --text or --text-file, not both")
			return 2
		}
		b, err := os.ReadFile(*textFile)
		if err != nil {
			fmt.Fprintf(stderr, "contenteval rules: %v\n", err)
			return 1
		}
		content = string(b)
	}
	opts := rules.EvalOptions{Threshold: *threshold, Expedited: *expedited, CountTokens: *countTokens, GlobalContext: *globalContext}
	if *backend != "" {
		reg, code := loadBackends(*backendsFile, stderr)
		if reg == nil {
			return code
		}
		if _, ok := reg.Backend(*backend); !ok {
			fmt.Fprintf(stderr, "contenteval rules eval: --backend %q is not in %s (it has %v)\n", *backend, *backendsFile, reg.Stacks())
			return 2
		}
		opts.Evaluator = reg.Evaluator(*backend, *expedited)
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

// The JSON shapes below follow the EvaluationReport of DESIGN §7 (camelCase, 64-bit
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
