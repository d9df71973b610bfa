package rules

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden report files under testdata/golden")

// TestGoldenReports evaluates a realistic multi-label policy (testdata/policy.rules)
// and compares each report with testdata/golden/NAME.json. Run with -update after an
// intended change and review the diff.
func TestGoldenReports(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "policy.rules"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustCompile(t, string(src), CompileOptions{})
	cases := []struct {
		name string
		text string
		opts EvalOptions
	}{
		{"clean", "Thanks for the recipe, I will try it this weekend!", EvalOptions{}},
		{"threat", "Listen to me: I will kill you. You are dead, loser.", EvalOptions{}},
		{"obfuscated-threat", "just k y s already, nobody likes you", EvalOptions{}},
		{"threat-excepted-as-lyrics", "Song lyrics I wrote: I will kill you, I will kill you (in minecraft)", EvalOptions{}},
		{"harassment", "You are such an 1d10t, I hate you. What a looooserrr.", EvalOptions{}},
		{"harassment-kidding", "ok loser, just kidding", EvalOptions{}},
		{"self-harm-fails-without-backend", "I want to die, there is no reason to live", EvalOptions{}},
		{"spam", "BUY NOW!!! Limited offer at https://example.test/deal", EvalOptions{}},
		{"spam-with-unsubscribe", "Buy now at https://example.test/deal - unsubscribe here", EvalOptions{}},
		{"news-exception", "Breaking news: police say a man threatened to kill a person with a knife at a school", EvalOptions{}},
		{"high-threshold", "You are such an 1d10t, I hate you.", EvalOptions{Threshold: 0.95}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := eval(t, p, Content{Text: tc.text}, tc.opts)
			got, err := json.MarshalIndent(struct {
				Text   string
				Report *Report
			}{tc.text, r}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", tc.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenReports -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("report differs from %s (run with -update and review the diff):\n%s", path, got)
			}
		})
	}
}
