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
