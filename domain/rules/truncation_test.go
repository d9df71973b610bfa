package rules

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestSpanBoundsKeepTheVerdict evaluates texts whose matches exceed the span
// bounds: the report must say it left spans out, stay within the bounds,
// and carry the same verdict — every section's outcome and score, every
// assertion's outcome and score, labelMatches — as each label evaluated
// alone, where the report-wide bounds cannot reach it.
func TestSpanBoundsKeepTheVerdict(t *testing.T) {
	rule := `ANY(=("lorem"), =("ipsum"))`
	many := strings.Repeat("lorem ipsum ", 16<<10/12)
	for _, tc := range []struct {
		name      string
		labels    int
		text      string
		truncated bool
	}{
		{"within every bound", 1, "lorem ipsum dolor", false},
		{"more spans than a rule carries", 1, strings.Repeat("lorem ", 20), true},
		{"more matches than a signal locates", 1, many, true},
		{"more spans than a report carries", 300, many, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc strings.Builder
			for i := range tc.labels {
				fmt.Fprintf(&doc, "LABEL \"L%d\" {\n  %s\n}\n", i, rule)
			}
			rep := evaluateDoc(t, doc.String(), tc.text)
			if rep.SpansTruncated != tc.truncated {
				t.Fatalf("SpansTruncated = %v, want %v", rep.SpansTruncated, tc.truncated)
			}
			spans, matches := 0, 0
			for i, sec := range rep.Sections {
				n := len(sec.Assertions[0].FlaggedSpans())
				if n > MaxSpansPerAssertion {
					t.Fatalf("section %d: %d spans on one rule", i, n)
				}
				if len(sec.Matches) > MaxSpansPerHit {
					t.Fatalf("section %d: %d matches", i, len(sec.Matches))
				}
				spans, matches = spans+n, matches+len(sec.Matches)
				if i > 20 && i < tc.labels-1 {
					continue // the same as their neighbours, and slow to compile one by one
				}
				alone := evaluateDoc(t, fmt.Sprintf("LABEL \"L%d\" {\n  %s\n}\n", i, rule), tc.text)
				sameVerdict(t, sec, alone.Sections[0])
				if rep.LabelMatches[sec.Name] != alone.LabelMatches[sec.Name] {
					t.Fatalf("labelMatches[%s] = %v, alone %v", sec.Name, rep.LabelMatches[sec.Name], alone.LabelMatches[sec.Name])
				}
			}
			if spans > MaxSpansPerReport || matches > MaxSpansPerReport {
				t.Fatalf("%d spans, %d matches in one report", spans, matches)
			}
			if len(rep.LabelMatches) != tc.labels || rep.Result != OutcomeTrue {
				t.Fatalf("result %s with %d labels matched, want TRUE with %d", rep.Result, len(rep.LabelMatches), tc.labels)
			}
		})
	}
}

func evaluateDoc(t *testing.T, doc, text string) *Report {
	t.Helper()
	p, err := Compile(doc, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Evaluate(context.Background(), Content{Text: text}, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func sameVerdict(t *testing.T, got, want SectionReport) {
	t.Helper()
	if got.Result != want.Result || got.Score != want.Score || got.Review != want.Review || len(got.Assertions) != len(want.Assertions) {
		t.Fatalf("section %s: %s %v, alone %s %v", got.Name, got.Result, got.Score, want.Result, want.Score)
	}
	for k := range got.Assertions {
		g, w := got.Assertions[k], want.Assertions[k]
		if g.Result != w.Result || g.Score != w.Score || g.Message != w.Message {
			t.Fatalf("section %s rule %d: %s %v, alone %s %v", got.Name, k, g.Result, g.Score, w.Result, w.Score)
		}
	}
}
