package rules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func fuzzSeedsRules(f *testing.F) {
	src, err := os.ReadFile(filepath.Join("testdata", "policy.rules"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(src),
		`LABEL "a" { "x" [USED WITH] "y" }`,
		"LABEL \"a\" {\n ANY(=(\"p\"), ~(\"q\"),)\n NOT NONE(\"r\") AND (\"s\" OR \"t\")\n}",
		`"p"` + "\n" + `EXCEPT WHEN { "q" }`,
		`PRIORITY: "a" > "b"` + "\nLABEL \"a\" { \"x\" }\nSECTION \"b\" { \"y\" }",
		"LABEL “curly” { “a \\\" b” }",
		`LABEL "a" { REGEX("(") SENTIMENT("meh") HASH("pdq:00", 999) }`,
		`LABEL "a" { ((((((((((((((((((((((((((((((((((("x"))))))))))))))))))))))))))))))))))) }`,
		"LABEL \"a\" {\n \"unterminated\n}",
		"}}}{{{((([[[",
		`LABEL "a" { QUESTION("q?") [NEAR] HASH("md5:00") }`,
	} {
		f.Add(s)
	}
}

// FuzzCompile checks that any text compiles or fails with positioned errors, never
// panics, and that whatever compiles can be evaluated.
func FuzzCompile(f *testing.F) {
	fuzzSeedsRules(f)
	f.Fuzz(func(t *testing.T, src string) {
		for _, opts := range []CompileOptions{{}, {LabelName: "L"}} {
			p, err := Compile(src, opts)
			if err != nil {
				var ce *CompileErrors
				if !errors.As(err, &ce) || len(ce.Errors) == 0 {
					t.Fatalf("error %v is not a non-empty *CompileErrors", err)
				}
				lines := strings.Count(src, "\n") + 1
				for _, e := range ce.Errors {
					if e.Line < 1 || e.Column < 1 || e.Line > lines || e.Message == "" {
						t.Fatalf("bad error position %d:%d (%d lines): %q", e.Line, e.Column, lines, e.Message)
					}
				}
				continue
			}
			r, err := p.Evaluate(context.Background(), Content{Text: "I will kill you, idiot. k y s"}, EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, r, "I will kill you, idiot. k y s")
		}
	})
}

var fuzzPlan = func() *Plan {
	src, err := os.ReadFile(filepath.Join("testdata", "policy.rules"))
	if err != nil {
		panic(err)
	}
	p, err := Compile(string(src)+`
LABEL "Extra" {
    "personal data" [NEAR] REGEX("\d{3}")
    =("杀了你") OR =("🔪") OR ~("ass") OR ~("stupid")
    SENTIMENT("positive") AND NOT SENTIMENT("neutral")
}`, CompileOptions{})
	if err != nil {
		panic(err)
	}
	return p
}()

// FuzzEvaluate checks that any text evaluates without panicking, with scores in range
// and match spans inside the text.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"", " ", "I will kill you", "k.i.l.l k i l l k-i-l-l sh!t $hit a$$ 1d10t",
		"ｋｉｌｌ кill kíll", "我要杀了你 🔪🔪 👩‍👩‍👧", "Buy now! https://x.test/a\nunsubscribe",
		"A gun. And then. School", strings.Repeat("l o s e r ", 50), "\x00\xff\xfe", "e.g. u.s.a. 3.14 $100 C++",
		"Song lyrics: you are dead", "\u200b\u200dk\u0301i\u0308l\u0300l",
		// fuzzy families: invisible characters, styled letters, inflections, compounds
		"i\u200bd\u00adi\u2060o\ufe0ft \u200b \u00ad", "⒦⒤⒧⒧ 🇰🇮🇱🇱 🅺 🅸 🅻 🅻 𝐤𝐢𝐥𝐥", "IDIOTS!!! killers hating",
		"youidiot ihateyou Middlesex " + strings.Repeat("qwertyuiopasdfghjklzxcvb ", 20), "i.d.1.0.t k.1.l.l",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := fuzzPlan.Evaluate(context.Background(), Content{Text: text}, EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkReport(t, r, text)
	})
}

func checkReport(t *testing.T, r *Report, text string) {
	t.Helper()
	okScore := func(s float64) bool { return s == -1 || (s >= 0 && s <= 1) }
	for _, s := range r.Sections {
		if !okScore(s.Score) {
			t.Fatalf("section %q score %v", s.Name, s.Score)
		}
		for _, a := range s.Assertions {
			if !okScore(a.Score) {
				t.Fatalf("assertion %q score %v", a.Message, a.Score)
			}
		}
		for _, m := range s.Matches {
			if m.Start < 0 || m.End > len(text) || m.Start >= m.End {
				t.Fatalf("span %v outside text of %d bytes", m, len(text))
			}
			if utf8.ValidString(text) && !utf8.ValidString(text[m.Start:m.End]) {
				t.Fatalf("span %v splits a character", m)
			}
		}
	}
	checkSpans(t, r, text)
	switch r.Result {
	case OutcomeTrue, OutcomeFalse, OutcomeFailed:
	default:
		t.Fatalf("result %q", r.Result)
	}
}
