package domain

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/rules"
)

func reviewReport(sections ...rules.SectionReport) *rules.Report {
	return &rules.Report{Sections: sections}
}

func TestReviewQueueMatches(t *testing.T) {
	threatTrue := rules.SectionReport{Name: "Threat", Result: rules.OutcomeTrue, Score: 0.9}
	spamFalse := rules.SectionReport{Name: "Spam", Result: rules.OutcomeFalse, Score: 0.3}
	failed := rules.SectionReport{Name: "Threat", Result: rules.OutcomeFailed, Score: -1}
	job := ReviewJob{ID: "j", AccountID: "a", PolicyID: "p"}
	for _, tc := range []struct {
		name   string
		routes []ReviewRoute
		job    ReviewJob
		report *rules.Report
		want   []ReviewMatch
	}{
		{"label and band", []ReviewRoute{{PolicyID: "p", Label: "Threat", MinScore: 0.5, MaxScore: 2}}, job,
			reviewReport(threatTrue, spamFalse), []ReviewMatch{{"Threat", 0.9, "OUTCOME_TRUE"}}},
		{"any section in the band", []ReviewRoute{{PolicyID: "p", MinScore: 0, MaxScore: 2}}, job,
			reviewReport(threatTrue, spamFalse), []ReviewMatch{{"Threat", 0.9, "OUTCOME_TRUE"}, {"Spam", 0.3, "OUTCOME_FALSE"}}},
		{"max is exclusive", []ReviewRoute{{PolicyID: "p", MinScore: 0, MaxScore: 0.9}}, job,
			reviewReport(threatTrue), nil},
		{"min is inclusive", []ReviewRoute{{PolicyID: "p", MinScore: 0.9, MaxScore: 1}}, job,
			reviewReport(threatTrue), []ReviewMatch{{"Threat", 0.9, "OUTCOME_TRUE"}}},
		{"outcome filter", []ReviewRoute{{PolicyID: "p", MinScore: 0, MaxScore: 2, Outcomes: []string{"OUTCOME_FALSE"}}}, job,
			reviewReport(threatTrue, spamFalse), []ReviewMatch{{"Spam", 0.3, "OUTCOME_FALSE"}}},
		{"failed by its outcome alone", []ReviewRoute{{PolicyID: "p", MinScore: 0.5, MaxScore: 2, Outcomes: []string{"OUTCOME_FAILED"}}}, job,
			reviewReport(failed), []ReviewMatch{{"Threat", -1, "OUTCOME_FAILED"}}},
		{"another policy", []ReviewRoute{{PolicyID: "q", MinScore: 0, MaxScore: 2}}, job, reviewReport(threatTrue), nil},
		{"a label route on a policy job", []ReviewRoute{{LabelID: "l", MinScore: 0, MaxScore: 2}}, job, reviewReport(threatTrue), nil},
		{"label route", []ReviewRoute{{LabelID: "l", MinScore: 0.5, MaxScore: 2}}, ReviewJob{ID: "j", LabelID: "l"},
			reviewReport(threatTrue), []ReviewMatch{{"Threat", 0.9, "OUTCOME_TRUE"}}},
		{"two routes, one match per section", []ReviewRoute{{PolicyID: "p", MinScore: 0, MaxScore: 2}, {PolicyID: "p", Label: "Threat", MinScore: 0, MaxScore: 2}}, job,
			reviewReport(threatTrue), []ReviewMatch{{"Threat", 0.9, "OUTCOME_TRUE"}}},
		{"no report", []ReviewRoute{{PolicyID: "p", MinScore: 0, MaxScore: 2}}, job, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &ReviewQueue{Routes: tc.routes}
			require.Equal(t, tc.want, q.Matches(tc.job, tc.report))
		})
	}
}

// BenchmarkReviewRouting measures the CPU routing adds to a recorded
// result: two queues of one route each against a report of two sections,
// the case of docs/review.md#routing; "no match" is every result that
// does not enter a queue, "match" one that enters one.
func BenchmarkReviewRouting(b *testing.B) {
	queues := []*ReviewQueue{
		{Routes: []ReviewRoute{{PolicyID: "p", Label: "Threat", MinScore: 0.5, MaxScore: 2, Outcomes: []string{"OUTCOME_TRUE"}}}},
		{Routes: []ReviewRoute{{PolicyID: "p", Label: "Spam", MinScore: 0.5, MaxScore: 2}}},
	}
	job := ReviewJob{ID: "j", AccountID: "a", PolicyID: "p"}
	for _, bc := range []struct {
		name   string
		report *rules.Report
	}{
		{"no match", reviewReport(rules.SectionReport{Name: "Threat", Result: rules.OutcomeFalse}, rules.SectionReport{Name: "Spam", Result: rules.OutcomeFalse})},
		{"match", reviewReport(rules.SectionReport{Name: "Threat", Result: rules.OutcomeTrue, Score: 1}, rules.SectionReport{Name: "Spam", Result: rules.OutcomeFalse})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, q := range queues {
					_ = q.Matches(job, bc.report)
				}
			}
		})
	}
}
