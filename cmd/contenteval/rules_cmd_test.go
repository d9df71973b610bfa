package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runRulesT(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"rules"}, args...), &out, &errb, func(string) string { return "" })
	return out.String(), errb.String(), code
}

func writeRules(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.rules")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRulesCheck(t *testing.T) {
	t.Parallel()
	good := writeRules(t, "LABEL \"A\" {\n  =(\"x\")\n}\n")
	if out, _, code := runRulesT(t, "check", good); code != 0 || out != "ok\n" {
		t.Errorf("check good: code %d out %q", code, out)
	}
	bad := writeRules(t, "LABEL \"A\" {\n  REGEX(\"(\")\n  \"x\" [NEER] \"y\"\n}\n")
	out, _, code := runRulesT(t, "check", bad)
	want := bad + ":2:3: invalid REGEX: missing closing ): `(`\n" + bad + ":3:7: unknown context operator [NEER]; did you mean [NEAR]?\n"
	if code != 1 || out != want {
		t.Errorf("check bad: code %d\n got %q\nwant %q", code, out, want)
	}
	// A label version compiles as such with --label, before or after the file.
	lv := writeRules(t, "=(\"x\")\n")
	if _, _, code := runRulesT(t, "check", lv); code != 1 {
		t.Errorf("bare rules as a policy: code %d, want 1", code)
	}
	if out, _, code := runRulesT(t, "check", lv, "--label", "Mine"); code != 0 || out != "ok\n" {
		t.Errorf("label version: code %d out %q", code, out)
	}
	if _, _, code := runRulesT(t, "check", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Errorf("missing file: code %d, want 1", code)
	}
}

func TestRulesEval(t *testing.T) {
	t.Parallel()
	p := writeRules(t, `PRIORITY: "Threat" > "Harassment"
LABEL "Threat": "remove" {
    ANY(=("i will kill you"), ~("kys"))
    EXCEPT WHEN { =("song lyrics") }
}
SECTION "Harassment": "review" {
    ~("idiot")
}
EXCEPT WHEN { =("breaking news") }
`)
	out, stderr, code := runRulesT(t, "eval", p, "--text", "k y s, you idiot", "--threshold", "0.6")
	if code != 0 {
		t.Fatalf("code %d stderr %s", code, stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if rep["result"] != "OUTCOME_TRUE" || rep["threshold"] != 0.6 {
		t.Errorf("result/threshold: %v %v", rep["result"], rep["threshold"])
	}
	if lm := rep["labelMatches"].(map[string]any); len(lm) != 1 || lm["Threat"] != 1.0 {
		t.Errorf("labelMatches %v", lm)
	}
	secs := rep["sectionEvaluationReports"].([]any)
	threat := secs[0].(map[string]any)
	for _, k := range []string{"name", "result", "message", "assertionEvaluationReports", "exceptionEvaluationReport", "reviewResult"} {
		if _, ok := threat[k]; !ok {
			t.Errorf("section lacks %q: %v", k, threat)
		}
	}
	a := threat["assertionEvaluationReports"].([]any)[0].(map[string]any)
	if a["message"] != `ANY(=("i will kill you"), ~("kys"))` || a["score"] != 1.0 || a["result"] != "OUTCOME_TRUE" {
		t.Errorf("assertion %v", a)
	}
	if spans, _ := a["spans"].([]any); len(spans) != 1 || fmt.Sprint(spans[0]) != "map[end:5 start:0 text:k y s]" {
		t.Errorf("assertion spans %v", a["spans"])
	}
	if rr := threat["reviewResult"].(map[string]any); rr["outcome"] != "OUTCOME_TRUE" || rr["score"] != 1.0 {
		t.Errorf("reviewResult %v", rr)
	}
	if h := secs[1].(map[string]any); h["result"] != "OUTCOME_FALSE" || h["message"] != "review" {
		t.Errorf("Harassment (demoted by PRIORITY) %v", h)
	}
	if _, ok := rep["exceptionEvaluationReport"].(map[string]any); !ok {
		t.Errorf("no document exception report")
	}
	tu := rep["tokenUsage"].(map[string]any)
	if tu["inputTokens"] != "0" || tu["billedTokens"] != "0" || tu["multiplier"].(float64) < 1 {
		t.Errorf("tokenUsage %v", tu)
	}
	if !strings.Contains(out, "\n  \"sectionEvaluationReports\"") {
		t.Error("output is not indented")
	}
	// --text-file and --count-tokens
	tf := filepath.Join(t.TempDir(), "text.txt")
	os.WriteFile(tf, []byte("Hello, world!"), 0o644)
	out, _, code = runRulesT(t, "eval", p, "--text-file", tf, "--count-tokens")
	if code != 0 || !strings.Contains(out, `"inputTokens": "4"`) {
		t.Errorf("text-file: code %d\n%s", code, out)
	}
}

func TestRulesUsage(t *testing.T) {
	t.Parallel()
	p := writeRules(t, "LABEL \"A\" { =(\"x\") }")
	for _, args := range [][]string{{}, {"frobnicate"}, {"check"}, {"check", p, p}, {"eval", p, "--threshold", "abc"}, {"eval", p, "--bogus"}} {
		if _, _, code := runRulesT(t, args...); code != 2 {
			t.Errorf("%q: code %d, want 2", args, code)
		}
	}
	if _, _, code := runRulesT(t, "eval", p, "--text", "x", "--threshold", "2"); code != 1 {
		t.Errorf("threshold 2: code %d, want 1", code)
	}
	if out, _, code := runRulesT(t, "help"); code != 0 || !strings.Contains(out, "rules check FILE") {
		t.Errorf("help: %d %q", code, out)
	}
}
