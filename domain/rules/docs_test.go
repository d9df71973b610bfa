package rules_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain/rules"
)

// The rule language reference (docs/rules.md) is tested here so that its examples
// cannot drift from the compiler. Its fenced blocks follow a small convention:
//
//	```rules            a policy document that must compile
//	```rules label      a label version (compiled with the label name "Example")
//	```rules error      text that must not compile; the next ```text block lists its
//	                    errors, one "LINE:COL: message" a line, exactly
//	```eval             checks on the last compiled block, one a line:
//	                    "TEXT" => -               no label is TRUE
//	                    "TEXT" => FAILED          the document result is OUTCOME_FAILED
//	                    "TEXT" => A, B=0.8        exactly these labels TRUE (score checked when given)

const docsRulesPath = "../../docs/rules.md"

type docBlock struct {
	info string // the fence's info string, e.g. "rules label"
	line int    // line of the opening fence, for messages
	body string
}

func readDocBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var blocks []docBlock
	var cur *docBlock
	var body strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case cur == nil && fence:
			cur = &docBlock{info: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")), line: n}
			body.Reset()
		case cur != nil && fence:
			cur.body = body.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: fence not closed", path, cur.line)
	}
	return blocks
}

func TestDocsRulesExamples(t *testing.T) {
	blocks := readDocBlocks(t, docsRulesPath)
	var plan *rules.Plan
	compiled, evaluated := 0, 0
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		where := fmt.Sprintf("docs/rules.md:%d", b.line)
		switch b.info {
		case "rules", "rules label":
			opts := rules.CompileOptions{}
			if b.info == "rules label" {
				opts.LabelName = "Example"
			}
			p, err := rules.Compile(b.body, opts)
			if err != nil {
				t.Fatalf("%s: example does not compile: %v", where, err)
			}
			plan = p
			compiled++
		case "rules error":
			if i+1 >= len(blocks) || blocks[i+1].info != "text" {
				t.Fatalf("%s: a rules error block must be followed by a text block of its errors", where)
			}
			checkDocCompileErrors(t, where, b.body, blocks[i+1].body)
			plan = nil
			i++
			compiled++
		case "eval":
			if plan == nil {
				t.Fatalf("%s: eval block without a compiled rules block before it", where)
			}
			evaluated += checkDocEvals(t, where, plan, b.body)
		}
	}
	if compiled == 0 || evaluated == 0 {
		t.Fatalf("found %d rules blocks and %d eval checks: the conventions of this test are not used", compiled, evaluated)
	}
}

func checkDocCompileErrors(t *testing.T, where, text, want string) {
	t.Helper()
	_, err := rules.Compile(text, rules.CompileOptions{})
	var ce *rules.CompileErrors
	if !errors.As(err, &ce) {
		t.Fatalf("%s: want compile errors, got %v", where, err)
	}
	var got []string
	for _, e := range ce.Errors {
		got = append(got, fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message))
	}
	if g, w := strings.Join(got, "\n"), strings.TrimSpace(want); g != w {
		t.Errorf("%s: compile errors differ from the documented ones\n got:\n%s\nwant:\n%s", where, g, w)
	}
}

func checkDocEvals(t *testing.T, where string, plan *rules.Plan, body string) int {
	t.Helper()
	checks := 0
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		quoted, want, ok := strings.Cut(line, "=>")
		if !ok {
			t.Fatalf("%s: eval line %q has no =>", where, line)
		}
		text, err := strconv.Unquote(strings.TrimSpace(quoted))
		if err != nil {
			t.Fatalf("%s: eval line %q: the text must be a Go-quoted string: %v", where, line, err)
		}
		report, err := plan.Evaluate(context.Background(), rules.Content{Text: text}, rules.EvalOptions{})
		if err != nil {
			t.Fatalf("%s: evaluate %q: %v", where, text, err)
		}
		if msg := compareDocOutcome(report, strings.TrimSpace(want)); msg != "" {
			t.Errorf("%s: %q: %s", where, text, msg)
		}
		checks++
	}
	return checks
}

// compareDocOutcome returns what differs between a report and an eval line's
// right-hand side, or "" when they agree.
func compareDocOutcome(r *rules.Report, want string) string {
	var got []string
	for name := range r.LabelMatches {
		got = append(got, name)
	}
	sort.Strings(got)
	switch want {
	case "-":
		if len(got) != 0 || r.Result == rules.OutcomeFailed {
			return fmt.Sprintf("want no TRUE label, got %v (result %s)", r.LabelMatches, r.Result)
		}
		return ""
	case "FAILED":
		if r.Result != rules.OutcomeFailed {
			return fmt.Sprintf("want OUTCOME_FAILED, got %s %v", r.Result, r.LabelMatches)
		}
		return ""
	}
	var names []string
	for _, item := range strings.Split(want, ",") {
		name, score, hasScore := strings.Cut(strings.TrimSpace(item), "=")
		names = append(names, name)
		if !hasScore {
			continue
		}
		w, err := strconv.ParseFloat(score, 64)
		if err != nil {
			return fmt.Sprintf("bad score %q", score)
		}
		if g, ok := r.LabelMatches[name]; !ok || g < w-0.005 || g > w+0.005 {
			return fmt.Sprintf("want %s scored %.2f, got %v", name, w, r.LabelMatches)
		}
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(got, ",") {
		return fmt.Sprintf("want TRUE labels %v, got %v", names, r.LabelMatches)
	}
	return ""
}
