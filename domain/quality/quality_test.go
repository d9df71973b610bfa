package quality

import (
	"reflect"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

func TestComparison(t *testing.T) {
	T, F, X, U := rules.OutcomeTrue, rules.OutcomeFalse, rules.OutcomeFailed, rules.OutcomeUnspecified
	// The live version has Threat and Spam; the shadow Spam and Scam.
	c := newComparison([]string{"Threat", "Spam"}, []string{"Spam", "Scam"})
	report := func(outcomes map[string]rules.Outcome) *rules.Report {
		r := &rules.Report{}
		for _, name := range []string{"Spam", "Scam"} {
			r.Sections = append(r.Sections, rules.SectionReport{Name: name, Result: outcomes[name]})
		}
		return r
	}
	lo := func(label string, a, s rules.Outcome) domain.ShadowLabelOutcome {
		return domain.ShadowLabelOutcome{Label: label, Active: a, Shadow: s, Disagrees: domain.ShadowOutcomesDisagree(a, s)}
	}
	for _, tc := range []struct {
		name      string
		active    map[string]rules.Outcome
		shadow    *rules.Report
		want      []domain.ShadowLabelOutcome
		disagrees bool
	}{
		{"nothing found", nil, report(map[string]rules.Outcome{"Spam": F, "Scam": F}), nil, false},
		{"both find Spam", map[string]rules.Outcome{"Spam": T}, report(map[string]rules.Outcome{"Spam": T, "Scam": F}),
			[]domain.ShadowLabelOutcome{lo("Spam", T, T)}, false},
		{"a label the shadow lacks", map[string]rules.Outcome{"Threat": T}, report(map[string]rules.Outcome{"Spam": F, "Scam": F}),
			[]domain.ShadowLabelOutcome{lo("Threat", T, U)}, true},
		{"a label the live version lacks", nil, report(map[string]rules.Outcome{"Spam": F, "Scam": T}),
			[]domain.ShadowLabelOutcome{lo("Scam", U, T)}, true},
		{"the shadow could not evaluate", map[string]rules.Outcome{"Spam": T}, nil,
			[]domain.ShadowLabelOutcome{lo("Spam", T, X), lo("Scam", U, X)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, disagrees := c.compare(tc.active, tc.shadow)
			if !reflect.DeepEqual(got, tc.want) || disagrees != tc.disagrees {
				t.Errorf("compare = %+v, %v; want %+v, %v", got, disagrees, tc.want, tc.disagrees)
			}
		})
	}
}
