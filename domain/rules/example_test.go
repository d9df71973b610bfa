package rules_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/contenteval/contenteval/domain/rules"
)

// A policy document holds labels (LABEL or SECTION blocks) of rules; a rule combines
// signals with AND, OR, NOT, ANY, ALL and NONE. The report explains every rule.
func Example() {
	policy := `
PRIORITY: "Threat" > "Harassment"

LABEL "Threat": "remove" {
    ANY(=("i will kill you"), ~("kys"))
}

SECTION "Harassment": "review" {
    ~("idiot") AND SENTIMENT("negative")
}
`
	plan, err := rules.Compile(policy, rules.CompileOptions{})
	if err != nil {
		panic(err)
	}
	report, err := plan.Evaluate(context.Background(), rules.Content{Text: "k y s, you 1d10t. I hate you."}, rules.EvalOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(report.Result)
	for _, s := range report.Sections {
		fmt.Printf("%s: %s\n", s.Name, s.Result)
		for _, a := range s.Assertions {
			fmt.Printf("  %s -> %.2f\n", a.Message, a.Score)
		}
	}
	fmt.Println(report.LabelMatches)
	// Output:
	// OUTCOME_TRUE
	// Threat: OUTCOME_TRUE
	//   ANY(=("i will kill you"), ~("kys")) -> 1.00
	// Harassment: OUTCOME_FALSE
	//   ~("idiot") AND SENTIMENT("negative") -> 0.57
	// map[Threat:1]
}

// Compile reports every error of a text at once, each with its line and column.
func ExampleCompile_errors() {
	_, err := rules.Compile(`LABEL "Bad" {
    REGEX("a(b")
    "weapon" [AGAINTS] "a person"
}`, rules.CompileOptions{})
	var ce *rules.CompileErrors
	if errors.As(err, &ce) {
		for _, e := range ce.Errors {
			fmt.Printf("%d:%d: %s\n", e.Line, e.Column, e.Message)
		}
	}
	// Output:
	// 2:5: invalid REGEX: missing closing ): `a(b`
	// 3:14: unknown context operator [AGAINTS]; did you mean [AGAINST]?
}

// A label version is just the rules of one label; the label supplies the name.
func ExampleCompile_labelVersion() {
	plan, err := rules.Compile(`
~("free money") AND REGEX("https?://")
EXCEPT WHEN { =("unsubscribe") }
`, rules.CompileOptions{LabelName: "Spam"})
	if err != nil {
		panic(err)
	}
	r, _ := plan.Evaluate(context.Background(), rules.Content{Text: "FREE MONEY at http://x.test"}, rules.EvalOptions{})
	fmt.Println(plan.Labels(), r.Sections[0].Result, r.Sections[0].Matches)
	// Output:
	// [Spam] OUTCOME_TRUE [{0 10} {14 21}]
}

// Fuzzy phrases see through obfuscation but not into innocent words.
func ExampleCompile_fuzzy() {
	plan, _ := rules.Compile(`~("kill") OR ~("loser")`, rules.CompileOptions{LabelName: "L"})
	for _, text := range []string{"k.i.l.l", "k1ll", "kíll", "skill", "lozer", "lover"} {
		r, _ := plan.Evaluate(context.Background(), rules.Content{Text: text}, rules.EvalOptions{})
		fmt.Printf("%-6s %.1f\n", text, r.Sections[0].Score)
	}
	// Output:
	// k.i.l.l 1.0
	// k1ll   1.0
	// kíll   1.0
	// skill  0.0
	// lozer  0.8
	// lover  0.0
}

// A context condition scores min(a, b) over occurrences in one sentence or within 12
// words; a signal that cannot be evaluated (QUESTION without a model backend) fails the
// section instead of silently scoring FALSE.
func ExamplePlan_Evaluate_failures() {
	plan, _ := rules.Compile(`LABEL "Weapons" {
    =("gun") [USED WITH] =("school")
}
LABEL "Intent" {
    QUESTION("Does the author plan an attack?")
}`, rules.CompileOptions{})
	r, _ := plan.Evaluate(context.Background(), rules.Content{Text: "Bringing my gun to school."}, rules.EvalOptions{})
	for _, s := range r.Sections {
		fmt.Println(s.Name, s.Result, s.Score)
	}
	fmt.Println(r.Result)
	// Output:
	// Weapons OUTCOME_TRUE 1
	// Intent OUTCOME_FAILED -1
	// OUTCOME_TRUE
}

// HASH signals compare image hashes: PDQ within a maximum distance, md5/sha1 exactly.
func ExamplePlan_Evaluate_hash() {
	plan, _ := rules.Compile(`HASH("md5:d41d8cd98f00b204e9800998ecf8427e")`, rules.CompileOptions{LabelName: "Known image"})
	r, _ := plan.Evaluate(context.Background(), rules.Content{Image: &rules.ImageFeatures{MD5: "d41d8cd98f00b204e9800998ecf8427e"}}, rules.EvalOptions{})
	fmt.Println(r.Sections[0].Result)
	// Output:
	// OUTCOME_TRUE
}

// A Cache keeps compiled plans by version id.
func ExampleCache() {
	cache := rules.NewCache(100)
	plan, err := cache.GetOrCompile("lv_123", `=("hello")`, rules.CompileOptions{LabelName: "Greeting"})
	if err != nil {
		panic(err)
	}
	again, _ := cache.Get("lv_123")
	fmt.Println(plan == again, plan.Stats().SignalCount)
	// Output:
	// true 1
}
