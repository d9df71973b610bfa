package rules

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// notingEvaluator answers by Source, says how it read each score, and
// records which signals it was asked about.
type notingEvaluator struct {
	mu      sync.Mutex
	asked   []string
	answers map[string]float64
	fail    bool
}

func (e *notingEvaluator) BundleSize() int { return 1 }

func (e *notingEvaluator) EvaluateSignals(_ context.Context, b SignalBatch) (SignalScores, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out SignalScores
	for _, s := range b.Signals {
		e.asked = append(e.asked, s.Source)
		if e.fail {
			out.Notes = append(out.Notes, "model m failed: timeout")
			continue
		}
		out.Scores = append(out.Scores, e.answers[s.Source])
		out.Notes = append(out.Notes, "model m, logprob")
	}
	if e.fail {
		return out, errors.New("timeout")
	}
	return out, nil
}

// costOrderRule is what a rule's report says.
type costOrderRule struct {
	result  Outcome
	score   float64
	message string // the whole message
}

var costOrderCases = []struct {
	name    string
	src     string
	text    string
	answers map[string]float64
	asked   []string // sorted
	section Outcome
	rules   []costOrderRule
	except  []costOrderRule
}{{
	name: "an exact phrase decides the label: its concepts are not asked",
	src: `LABEL "L" {
    =("kill")
    "threat of violence"
    NOT "friendly banter"
}`,
	text: "i will kill", section: OutcomeTrue,
	rules: []costOrderRule{
		{OutcomeTrue, 1, `=("kill")`},
		{OutcomeUnspecified, 0, `"threat of violence"` + skippedSuffix},
		{OutcomeUnspecified, 0, `NOT "friendly banter"` + skippedSuffix},
	},
}, {
	name: "a fired exception decides the label FALSE",
	src: `LABEL "L" {
    "threat of violence"
    EXCEPT WHEN {
        =("lyrics")
        "a news report"
    }
}`,
	text: "song lyrics", section: OutcomeFalse,
	rules:  []costOrderRule{{OutcomeUnspecified, 0, `"threat of violence"` + skippedSuffix}},
	except: []costOrderRule{{OutcomeTrue, 1, `=("lyrics")`}, {OutcomeUnspecified, 0, `"a news report"` + skippedSuffix}},
}, {
	name: "a rule decided FALSE by a built-in is not asked; the undecided one is",
	src: `LABEL "L" {
    "threat of violence" AND =("knife")
    QUESTION("Is it a threat?")
}`,
	text: "see you soon", answers: map[string]float64{`QUESTION("Is it a threat?")`: 0.9},
	asked: []string{`QUESTION("Is it a threat?")`}, section: OutcomeTrue,
	rules: []costOrderRule{
		{OutcomeFalse, 0, `"threat of violence" AND =("knife")` + skippedSuffix},
		{OutcomeTrue, 0.9, `QUESTION("Is it a threat?") (model m, logprob)`},
	},
}, {
	name: "a label TRUE by a built-in still asks its exceptions, not its other rules",
	src: `LABEL "L" {
    =("kill")
    "threat of violence"
    UNLESS {
        "a video game"
    }
}`,
	text: "kill the boss", answers: map[string]float64{`"a video game"`: 0.2},
	asked: []string{`"a video game"`}, section: OutcomeTrue,
	rules: []costOrderRule{
		{OutcomeTrue, 1, `=("kill")`},
		{OutcomeUnspecified, 0, `"threat of violence"` + skippedSuffix},
	},
	except: []costOrderRule{{OutcomeFalse, 0.2, `"a video game" (model m, logprob)`}},
}, {
	name: "nothing decided: every model signal is asked, contexts with their operator",
	src: `LABEL "L" {
    "weapon" [AGAINST] "a person"
    QUESTION("Is it a scam?")
}`,
	text: "x", answers: map[string]float64{`"weapon" [AGAINST] "a person"`: 0.7},
	asked:   []string{`"weapon" [AGAINST] "a person"`, `QUESTION("Is it a scam?")`},
	section: OutcomeTrue,
	rules: []costOrderRule{
		{OutcomeTrue, 0.7, `"weapon" [AGAINST] "a person" (model m, logprob)`},
		{OutcomeFalse, 0, `QUESTION("Is it a scam?") (model m, logprob)`},
	},
}, {
	name: "a document exception is asked only while some label can be TRUE",
	src: `LABEL "A" {
    "threat"
}
LABEL "B" {
    =("hello") AND "greeting"
}
EXCEPT WHEN {
    "satire"
}`,
	text: "bye", answers: map[string]float64{`"threat"`: 0.1, `"satire"`: 0.9},
	asked:   []string{`"satire"`, `"threat"`},
	section: OutcomeFalse,
	rules:   []costOrderRule{{OutcomeFalse, 0.1, `"threat" (model m, logprob)`}},
}}

func TestCostOrderAsksOnlyWhatCanChangeALabel(t *testing.T) {
	t.Parallel()
	for _, tc := range costOrderCases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.src, CompileOptions{})
			ev := &notingEvaluator{answers: tc.answers}
			r := eval(t, p, Content{Text: tc.text}, EvalOptions{Evaluator: ev})
			sort.Strings(ev.asked)
			if !slices.Equal(ev.asked, tc.asked) {
				t.Errorf("asked %q, want %q", ev.asked, tc.asked)
			}
			sec := r.Sections[0]
			if sec.Result != tc.section {
				t.Errorf("section %s, want %s", sec.Result, tc.section)
			}
			checkAssertions(t, "rule", sec.Assertions, tc.rules)
			if tc.except != nil {
				checkAssertions(t, "exception", sec.Exception.Assertions, tc.except)
			}
		})
	}
}

func checkAssertions(t *testing.T, what string, got []AssertionReport, want []costOrderRule) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d assertions, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		if g := got[i]; g.Result != w.result || !near(g.Score, w.score) || g.Message != w.message {
			t.Errorf("%s %d: %s %v %q, want %s %v %q", what, i, g.Result, g.Score, g.Message, w.result, w.score, w.message)
		}
	}
}

func TestCostOrderFailureNotesAndNoSilentFalse(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, `LABEL "L" {
    "threat of violence"
    =("hello")
}`, CompileOptions{})
	ev := &notingEvaluator{fail: true}
	r := eval(t, p, Content{Text: "bye"}, EvalOptions{Evaluator: ev})
	a := r.Sections[0].Assertions[0]
	if a.Result != OutcomeFailed || a.Score != -1 || !strings.HasSuffix(a.Message, "(model m failed: timeout)") {
		t.Errorf("failed signal: %+v", a)
	}
	if r.Sections[0].Result != OutcomeFailed || r.Result != OutcomeFailed {
		t.Errorf("section %s, report %s: a backend failure must fail the section", r.Sections[0].Result, r.Result)
	}
	// A skipped rule is never FAILED, even when the backend is down.
	r = eval(t, p, Content{Text: "hello"}, EvalOptions{Evaluator: ev})
	if a := r.Sections[0].Assertions[0]; a.Result != OutcomeUnspecified || r.Sections[0].Result != OutcomeTrue {
		t.Errorf("skipped under a dead backend: %+v, section %s", a, r.Sections[0].Result)
	}
	if len(ev.asked) != 1 {
		t.Errorf("asked %q: only the first evaluation needed the backend", ev.asked)
	}
}
