package domain

import (
	"testing"

	"github.com/contenteval/contenteval/domain/rules"
)

func TestConfusionRates(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		c                     Confusion
		precision, recall, f1 float64
		pOK, rOK, fOK, accOK  bool
		accuracy              float64
	}{
		{"empty", Confusion{}, 0, 0, 0, false, false, false, false, 0},
		{"known", Confusion{6, 2, 8, 4}, 0.75, 0.6, 12.0 / 18, true, true, true, true, 0.7},
		{"no positives predicted", Confusion{0, 0, 3, 2}, 0, 0, 0, false, true, true, true, 0.6},
		{"no positives expected", Confusion{0, 2, 1, 0}, 0, 0, 0, true, false, true, true, 1.0 / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, got float64, ok bool, want float64, wantOK bool) {
				t.Helper()
				if ok != wantOK || (ok && (got-want > 1e-12 || want-got > 1e-12)) {
					t.Errorf("%s = %v, %v; want %v, %v", what, got, ok, want, wantOK)
				}
			}
			p, ok := tc.c.Precision()
			check("precision", p, ok, tc.precision, tc.pOK)
			r, ok := tc.c.Recall()
			check("recall", r, ok, tc.recall, tc.rOK)
			f, ok := tc.c.F1()
			check("f1", f, ok, tc.f1, tc.fOK)
			a, ok := tc.c.Accuracy()
			check("accuracy", a, ok, tc.accuracy, tc.accOK)
		})
	}
	var c Confusion
	for _, e := range [][2]bool{{true, true}, {false, true}, {false, false}, {true, false}, {true, true}} {
		c.Add(e[0], e[1])
	}
	if c != (Confusion{2, 1, 1, 1}) {
		t.Errorf("Add: %+v", c)
	}
}

func TestShadowOutcomes(t *testing.T) {
	T, F, X, U := rules.OutcomeTrue, rules.OutcomeFalse, rules.OutcomeFailed, rules.OutcomeUnspecified
	for _, tc := range []struct {
		active, shadow    rules.Outcome
		disagree, notable bool
	}{
		{F, F, false, false},
		{U, F, false, false}, // a label the live version lacks, FALSE for the shadow
		{F, U, false, false},
		{T, T, false, true},
		{T, F, true, true},
		{U, T, true, true},
		{T, U, true, true},
		{X, X, false, true},
		{X, F, true, true},
	} {
		if got := ShadowOutcomesDisagree(tc.active, tc.shadow); got != tc.disagree {
			t.Errorf("disagree(%s, %s) = %v", tc.active, tc.shadow, got)
		}
		if got := ShadowNotable(tc.active, tc.shadow); got != tc.notable {
			t.Errorf("notable(%s, %s) = %v", tc.active, tc.shadow, got)
		}
	}
}

func TestShadowActiveRoundTrip(t *testing.T) {
	results := []*JobResult{
		{ID: "r1", ContentHash: "sha256::a", Report: &rules.Report{Sections: []rules.SectionReport{
			{Name: "Spam", Result: rules.OutcomeTrue}, {Name: "Threat", Result: rules.OutcomeFalse}, {Name: "Scam", Result: rules.OutcomeFailed}}}},
		{ID: "r2", Report: &rules.Report{Sections: []rules.SectionReport{{Name: "Spam", Result: rules.OutcomeFalse}}}},
	}
	got, err := DecodeShadowActive(EncodeShadowActive(results))
	if err != nil {
		t.Fatal(err)
	}
	want := []ShadowActive{
		{ResultID: "r1", ContentHash: "sha256::a", Outcomes: map[string]rules.Outcome{"Spam": rules.OutcomeTrue, "Scam": rules.OutcomeFailed}},
		{ResultID: "r2"},
	}
	if len(got) != 2 || got[0].ResultID != "r1" || got[0].ContentHash != want[0].ContentHash || len(got[0].Outcomes) != 2 ||
		got[0].Outcomes["Spam"] != rules.OutcomeTrue || got[0].Outcomes["Scam"] != rules.OutcomeFailed || got[1].ResultID != "r2" || got[1].Outcomes != nil {
		t.Errorf("round trip: %+v, want %+v", got, want)
	}
}

// FuzzDecodeShadowActive: the option is read back from the database; a
// damaged one is an error, never a panic.
func FuzzDecodeShadowActive(f *testing.F) {
	f.Add(`[{"r":"r1","h":"sha256::a","o":{"Spam":"OUTCOME_TRUE"}}]`)
	f.Add(`[]`)
	f.Add(`{"r":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		out, err := DecodeShadowActive(s)
		if err == nil {
			_ = EncodeShadowActive(nil)
			for _, a := range out {
				_ = a.Outcomes[a.ResultID]
			}
		}
	})
}
