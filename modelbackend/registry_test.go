package modelbackend

import (
	"context"
	"testing"

	"github.com/contenteval/contenteval/domain/rules"
)

func TestRegistryChoosesTheStack(t *testing.T) {
	t.Parallel()
	f, err := ParseFile([]byte(`default: main
backends:
  - {name: main, url: http://127.0.0.1:1/v1, model: m, profile: generic, expeditedBackend: fast}
  - {name: fast, url: http://127.0.0.1:2/v1, model: f, profile: shieldgemma}
  - {name: other, url: http://127.0.0.1:3/v1, model: o, profile: llama-guard}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(f, nil, nil)
	name := func(e rules.SignalEvaluator) string {
		if e == nil {
			return "builtin"
		}
		if b, ok := e.(*Backend); ok {
			return b.Name()
		}
		return "missing"
	}
	for _, tc := range []struct {
		stack     string
		expedited bool
		want      string
	}{
		{"", false, "main"}, {"", true, "fast"}, {"main", true, "fast"}, {"other", true, "other"},
		{"builtin", false, "builtin"}, {"builtin", true, "builtin"}, {"gone", false, "missing"},
	} {
		if got := name(r.Evaluator(tc.stack, tc.expedited)); got != tc.want {
			t.Errorf("stack %q expedited %v: %s, want %s", tc.stack, tc.expedited, got, tc.want)
		}
	}
	for name, known := range map[string]bool{"": true, "builtin": true, "main": true, "gone": false} {
		if r.KnownStack(name) != known {
			t.Errorf("KnownStack(%q) = %v", name, !known)
		}
	}
	// A stack stored before the file lost it fails its signals, saying why.
	res, err := r.Evaluator("gone", false).EvaluateSignals(context.Background(), rules.SignalBatch{Signals: make([]rules.SignalRequest, 2)})
	if err != nil || res.Scores[1] != -1 || res.Notes[1] != "model backend gone is not configured" {
		t.Errorf("missing backend: %+v %v", res, err)
	}
}
