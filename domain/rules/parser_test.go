package rules

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, src string, opts CompileOptions) *Plan {
	t.Helper()
	p, err := Compile(src, opts)
	if err != nil {
		t.Fatalf("Compile: %v\nsource:\n%s", err, src)
	}
	return p
}

// ruleSources lists, per label, the source text of each rule: what the report shows.
func ruleSources(p *Plan) map[string][]string {
	out := map[string][]string{}
	for _, l := range p.labels {
		for _, r := range l.rules {
			out[l.name] = append(out[l.name], r.src)
		}
	}
	return out
}

// shape renders a rule's compiled tree compactly, to check precedence and grouping.
func shape(p *Plan, n *node) string {
	names := map[exprKind]string{exNot: "NOT", exAnd: "AND", exOr: "OR", exAny: "ANY", exAll: "ALL", exNone: "NONE"}
	switch n.kind {
	case exSignal:
		s := p.signals[n.sig]
		return string(s.kind) + ":" + s.text
	case exContext:
		c := p.contexts[n.sig]
		return "[" + shape(p, &node{kind: exSignal, sig: c.left}) + " " + c.op + " " + shape(p, &node{kind: exSignal, sig: c.right}) + "]"
	}
	parts := make([]string, len(n.kids))
	for i, k := range n.kids {
		parts[i] = shape(p, k)
	}
	return names[n.kind] + "(" + strings.Join(parts, ", ") + ")"
}

func TestGrammar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		src   string
		label string // CompileOptions.LabelName
		want  []string
	}{
		{"concept", `LABEL "a" { "violence" }`, "", []string{"concept:violence"}},
		{"exact and fuzzy", "LABEL \"a\" {\n =(\"x y\")\n ~(\"kys\")\n}", "", []string{"exact:x y", "fuzzy:kys"}},
		{"keywords any case", "label \"a\" {\n sentiment(\"negative\") and not regex(\"x\")\n}", "", []string{"AND(sentiment:negative, NOT(regex:x))"}},
		{"AND binds tighter than OR", `SECTION "a" { "p" OR "q" AND "r" }`, "", []string{"OR(concept:p, AND(concept:q, concept:r))"}},
		{"parentheses", `LABEL "a" { ("p" OR "q") AND "r" }`, "", []string{"AND(OR(concept:p, concept:q), concept:r)"}},
		{"NOT NOT", `LABEL "a" { NOT NOT "p" }`, "", []string{"NOT(NOT(concept:p))"}},
		{"lists and trailing comma", `LABEL "a" { ANY("p", =("q"),) AND ALL("r") AND NONE(~("s"), ("t" OR "u")) }`, "",
			[]string{"AND(ANY(concept:p, exact:q), ALL(concept:r), NONE(fuzzy:s, OR(concept:t, concept:u)))"}},
		{"context", `LABEL "a" { "threat" [AGAINST] "a person" }`, "", []string{"[concept:threat AGAINST concept:a person]"}},
		{"multi-word operator any case", `LABEL "a" { "gun" [used   with] =("school") }`, "", []string{"[concept:gun USED WITH exact:school]"}},
		{"context in list", `LABEL "a" { ANY("x" [NEAR] "y", "z") }`, "", []string{"ANY([concept:x NEAR concept:y], concept:z)"}},
		{"curly quotes and escapes", "LABEL “a” { “say \\\"hi\\\"” OR \"back\\\\slash\" OR REGEX(\"\\bx\\d\") }", "",
			[]string{`OR(concept:say "hi", concept:back\slash, regex:\bx\d)`}},
		{"question and hash", `LABEL "a" { QUESTION("Is this a threat?") OR HASH("md5:0123456789abcdef0123456789abcdef") OR HASH("pdq:` + strings.Repeat("ab", 32) + `", 20) }`, "",
			[]string{"OR(question:Is this a threat?, hash:md5:0123456789abcdef0123456789abcdef, hash:pdq:" + strings.Repeat("ab", 32) + ")"}},
		{"rule spans lines inside parentheses", "LABEL \"a\" {\n ANY(\"p\",\n     \"q\")\n}", "", []string{"ANY(concept:p, concept:q)"}},
		{"dangling AND continues", "LABEL \"a\" {\n \"p\" AND\n \"q\"\n}", "", []string{"AND(concept:p, concept:q)"}},
		{"comments", "// top\nLABEL \"a\" { // after brace\n \"p\" // after rule\n // alone\n \"q\" // \"not a string\"\n}", "", []string{"concept:p", "concept:q"}},
		{"label version: bare rules", "\"p\"\n=(\"q\")\nEXCEPT WHEN { \"r\" }", "Mine", []string{"concept:p", "exact:q"}},
		{"label version: one block", `SECTION "Named": "msg" { "p" }`, "Mine", []string{"concept:p"}},
		{"same line block", `LABEL "a": "remove" { "p" EXCEPT WHEN { "q" } }`, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tc.src, CompileOptions{LabelName: tc.label})
			if tc.want == nil {
				return
			}
			var got []string
			for _, r := range p.labels[0].rules {
				got = append(got, shape(p, r.root))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestGrammarStructure(t *testing.T) {
	t.Parallel()
	src := `PRIORITY: "A" > "B" > "C"
priority: "C" > "A"
LABEL "A": "remove" {
    "p"
    EXCEPT WHEN { "e1" }
    UNLESS {
        "e2"
    }
}
SECTION "B" { "q" }
label "C" { "r" }
EXCEPT WHEN { "news reporting" }
`
	p := mustCompile(t, src, CompileOptions{})
	if got, want := p.Labels(), []string{"A", "B", "C"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Labels() = %q, want %q", got, want)
	}
	if got := p.labels[0].message; got != "remove" {
		t.Errorf("message = %q", got)
	}
	if got := len(p.labels[0].except); got != 2 {
		t.Errorf("label A has %d exception rules, want 2 (blocks merge)", got)
	}
	if got := len(p.docExcept); got != 1 {
		t.Errorf("%d document exception rules, want 1", got)
	}
	if want := [][]int{{0, 1, 2}, {2, 0}}; !reflect.DeepEqual(p.priorities, want) {
		t.Errorf("priorities = %v, want %v", p.priorities, want)
	}
	// The rule text is what reviewers see: exactly as written, comments and all.
	src2 := "LABEL \"x\" {\n    ANY(\"a\", // first\n        \"b\")   \n}"
	p2 := mustCompile(t, src2, CompileOptions{})
	if got, want := ruleSources(p2)["x"], []string{"ANY(\"a\", // first\n        \"b\")"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rule source = %q, want %q", got, want)
	}
	p3 := mustCompile(t, `"p"`, CompileOptions{LabelName: "Given"})
	if got := p3.Labels(); !reflect.DeepEqual(got, []string{"Given"}) {
		t.Errorf("label version name = %q", got)
	}
}

type wantErr struct {
	line, col int
	msg       string // substring
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		src   string
		opts  CompileOptions
		wants []wantErr
	}{
		{"unterminated string", "LABEL \"a\" {\n  \"abc\n}", CompileOptions{}, []wantErr{{2, 3, "unterminated string"}}},
		{"unknown operator names closest", "LABEL \"a\" {\n  \"x\" [AGAINTS] \"y\"\n}", CompileOptions{}, []wantErr{{2, 7, "unknown context operator [AGAINTS]; did you mean [AGAINST]?"}}},
		{"unknown multi-word operator", "LABEL \"a\" {\n  \"x\" [USED WIHT] \"y\"\n}", CompileOptions{}, []wantErr{{2, 7, "did you mean [USED WITH]?"}}},
		{"bad regex", "LABEL \"a\" {\n    REGEX(\"a(b\")\n}", CompileOptions{}, []wantErr{{2, 5, "invalid REGEX: missing closing )"}}},
		{"bad sentiment", "LABEL \"a\" { SENTIMENT(\"angry\") }", CompileOptions{}, []wantErr{{1, 13, `SENTIMENT takes "negative", "positive" or "neutral"`}}},
		{"bad hash kind", "LABEL \"a\" { HASH(\"crc:00\") }", CompileOptions{}, []wantErr{{1, 13, "HASH takes"}}},
		{"bad hash length", "LABEL \"a\" { HASH(\"pdq:abcd\") }", CompileOptions{}, []wantErr{{1, 13, "pdq value must be 64 hex digits"}}},
		{"distance on md5", "LABEL \"a\" { HASH(\"md5:0123456789abcdef0123456789abcdef\", 3) }", CompileOptions{}, []wantErr{{1, 13, "applies only to pdq"}}},
		{"hash distance out of range", "LABEL \"a\" { HASH(\"pdq:" + strings.Repeat("0", 64) + "\", 300) }", CompileOptions{}, []wantErr{{1, 90, "out of range"}}},
		{"missing brace", "LABEL \"a\" \"p\" }", CompileOptions{}, []wantErr{{1, 11, `expected "{" to open the LABEL block`}}},
		{"unclosed block", "LABEL \"a\" {\n \"p\"\n", CompileOptions{}, []wantErr{{1, 1, `LABEL "a" is not closed`}}},
		{"empty label", "LABEL \"a\" {\n}", CompileOptions{}, []wantErr{{1, 1, `LABEL "a" has no rules`}}},
		{"rule outside block", "\"p\"\nLABEL \"a\" { \"q\" }", CompileOptions{}, []wantErr{{1, 1, "rules belong inside a LABEL or SECTION block"}}},
		{"two rules on a line", "LABEL \"a\" {\n  \"p\" \"q\"\n}", CompileOptions{}, []wantErr{{2, 7, "expected end of rule"}}},
		{"missing operand", "LABEL \"a\" {\n  \"p\" AND\n}", CompileOptions{}, []wantErr{{3, 1, "expected a signal"}}},
		{"bare word", "LABEL \"a\" {\n  violence\n}", CompileOptions{}, []wantErr{{2, 3, "concepts are quoted strings"}}},
		{"single quotes", "LABEL \"a\" {\n  'x'\n}", CompileOptions{}, []wantErr{{2, 3, "strings use double quotes"}}},
		{"ampersand", "LABEL \"a\" {\n  \"x\" && \"y\"\n}", CompileOptions{}, []wantErr{{2, 7, "use AND"}}},
		{"empty list", "LABEL \"a\" { ANY() }", CompileOptions{}, []wantErr{{1, 17, "ANY needs at least one operand"}}},
		{"list missing comma", "LABEL \"a\" { ANY(\"x\" \"y\") }", CompileOptions{}, []wantErr{{1, 21, `expected "," or ")"`}}},
		{"empty concept", "LABEL \"a\" { \"\" }", CompileOptions{}, []wantErr{{1, 13, "empty concept"}}},
		{"phrase without words", "LABEL \"a\" { =(\"!!!\") }", CompileOptions{}, []wantErr{{1, 13, "has no words"}}},
		{"chained context", "LABEL \"a\" { \"x\" [IN] \"y\" [ON] \"z\" }", CompileOptions{}, []wantErr{{1, 26, "cannot be chained"}}},
		{"hash in context", "LABEL \"a\" { \"x\" [NEAR] HASH(\"md5:0123456789abcdef0123456789abcdef\") }", CompileOptions{}, []wantErr{{1, 13, "HASH cannot take part in a context condition"}}},
		{"EXCEPT without WHEN", "LABEL \"a\" { \"x\"\n EXCEPT { \"y\" } }", CompileOptions{}, []wantErr{{2, 9, "expected WHEN after EXCEPT"}}},
		{"empty exception", "LABEL \"a\" { \"x\"\n EXCEPT WHEN { } }", CompileOptions{}, []wantErr{{2, 2, "exception block has no rules"}}},
		{"priority unknown label", "PRIORITY: \"A\" > \"Z\"\nLABEL \"A\" { \"x\" }", CompileOptions{}, []wantErr{{1, 17, `PRIORITY names unknown label "Z"`}}},
		{"priority needs two", "PRIORITY: \"A\"\nLABEL \"A\" { \"x\" }", CompileOptions{}, []wantErr{{1, 1, "at least two labels"}}},
		{"duplicate label", "LABEL \"A\" { \"x\" }\nSECTION \"a\" { \"y\" }", CompileOptions{}, []wantErr{{2, 1, `label "a" is defined twice (first at line 1)`}}},
		{"stray brace", "}\nLABEL \"A\" { \"x\" }", CompileOptions{}, []wantErr{{1, 1, `unexpected "}"`}}},
		{"no labels", "// nothing\n", CompileOptions{}, []wantErr{{1, 1, "no labels"}}},
		{"label version: two blocks", "LABEL \"A\" { \"x\" }\nLABEL \"B\" { \"y\" }", CompileOptions{LabelName: "A"}, []wantErr{{2, 1, "exactly one LABEL/SECTION block"}}},
		{"label version: rules then block", "\"x\"\nLABEL \"B\" { \"y\" }", CompileOptions{LabelName: "A"}, []wantErr{{2, 1, "either a list of rules or exactly one"}}},
		{"label version: priority", "PRIORITY: \"A\" > \"B\"\n\"x\"", CompileOptions{LabelName: "A"}, []wantErr{{1, 1, "PRIORITY belongs in a policy document"}}},
		{"text size limit", strings.Repeat(" ", 100), CompileOptions{Limits: Limits{MaxTextBytes: 50}}, []wantErr{{1, 1, "more than the limit of 50"}}},
		{"depth limit", "LABEL \"a\" { " + strings.Repeat("(", 5) + "\"x\"" + strings.Repeat(")", 5) + " }", CompileOptions{Limits: Limits{MaxDepth: 3}}, []wantErr{{1, 17, "nests too deeply (more than 3 levels)"}}},
		{"rule limit", "LABEL \"a\" {\n\"x\"\n\"y\"\n\"z\"\n}", CompileOptions{Limits: Limits{MaxRules: 2}}, []wantErr{{4, 1, "too many rules: the limit is 2"}}},
		{"signal limit", "LABEL \"a\" {\n\"x\" OR \"y\" OR \"z\"\n}", CompileOptions{Limits: Limits{MaxSignals: 2}}, []wantErr{{2, 15, "too many signals: the limit is 2"}}},
		{"label limit", "LABEL \"a\" { \"x\" }\nLABEL \"b\" { \"y\" }", CompileOptions{Limits: Limits{MaxLabels: 1}}, []wantErr{{2, 1, "too many labels"}}},
		{"invalid utf-8", "LABEL \"a\" { \"\xff\" }", CompileOptions{}, []wantErr{{1, 1, "not valid UTF-8"}}},
		{"columns count characters", "LABEL \"é\" { \"x\" [ÜBER] \"y\" }", CompileOptions{}, []wantErr{{1, 17, "unknown context operator [ÜBER]"}}},
		{"all errors reported", "LABEL \"a\" {\n  REGEX(\"(\")\n  \"x\" [FOO] \"y\"\n  SENTIMENT(\"meh\")\n}\nLABEL \"b\" {\n  =(\"ok\") \"extra\"\n}",
			CompileOptions{}, []wantErr{{2, 3, "invalid REGEX"}, {3, 7, "unknown context operator"}, {4, 3, "SENTIMENT takes"}, {7, 11, "expected end of rule"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tc.src, tc.opts)
			var ce *CompileErrors
			if !errors.As(err, &ce) {
				t.Fatalf("Compile error = %v, want *CompileErrors", err)
			}
			if len(ce.Errors) != len(tc.wants) {
				t.Fatalf("got %d errors %v, want %d", len(ce.Errors), ce.Errors, len(tc.wants))
			}
			for i, w := range tc.wants {
				g := ce.Errors[i]
				if g.Line != w.line || g.Column != w.col || !strings.Contains(g.Message, w.msg) {
					t.Errorf("error %d = %d:%d %q, want %d:%d containing %q", i, g.Line, g.Column, g.Message, w.line, w.col, w.msg)
				}
			}
		})
	}
}

func TestCompileErrorsAreBounded(t *testing.T) {
	t.Parallel()
	_, err := Compile(strings.Repeat("LABEL \"a\" { ' }\n", 500), CompileOptions{})
	var ce *CompileErrors
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
	if n := len(ce.Errors); n > maxReportedErrors+1 {
		t.Errorf("%d errors reported, want at most %d", n, maxReportedErrors+1)
	}
	if last := ce.Errors[len(ce.Errors)-1]; !strings.Contains(last.Message, "too many errors") {
		t.Errorf("last error = %q, want a truncation note", last.Message)
	}
}

func TestOperatorTable(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"in", "on", "about", "near", "against", "with", "used with", "concerning", "in front of", "according to", "next to", "because of", "instead of", "towards", "regarding"} {
		if _, ok := lookupOperator(op); !ok {
			t.Errorf("operator %q missing from the table", op)
		}
	}
	for in, want := range map[string]string{"agianst": "AGAINST", "nera": "NEAR", "abuot": "ABOUT", "in frnt of": "IN FRONT OF"} {
		if got := closestOperator(in); got != want {
			t.Errorf("closestOperator(%q) = %q, want %q", in, got, want)
		}
	}
}
