package handlers

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/gen"
)

// The job responses carry the very bytes the generated Visit methods write
// (HTML escaping and trailing newline included): with a Content-Length
// when they fit sizedBodyBuffer, chunked as encoded when they do not.
func TestJobResponses(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	job := func(id string, results int) *domain.Job {
		j := &domain.Job{ID: id, AccountID: "a", Status: domain.JobCompleted, PolicyID: "p<&>", PolicyVersionID: "v",
			Created: now, Updated: now, Completed: &now, Contents: []domain.ContentSummary{{ContentHash: "h"}}}
		for i := range results {
			spans := []rules.TextSpan{{Start: 0, End: 5, Text: "<b>&"}}
			secs := make([]rules.SectionReport, 200)
			for k := range secs {
				secs[k] = rules.SectionReport{Name: "L" + strconv.Itoa(k), Result: rules.OutcomeTrue, Score: 1,
					Assertions: []rules.AssertionReport{{Result: rules.OutcomeTrue, Message: `=("results":[])`, Score: 1, Spans: &spans}}}
			}
			j.Results = append(j.Results, &domain.JobResult{ID: "r" + strconv.Itoa(i), Index: i, Created: now,
				Metadata: map[string]string{"results": "[]"},
				Report:   &rules.Report{Result: rules.OutcomeTrue, Sections: secs, LabelMatches: map[string]float64{"L0": 1}, SpansTruncated: true}})
		}
		return j
	}
	big := strings.Repeat("x", 8<<10)
	cases := []struct {
		name  string
		job   *domain.Job
		sized bool
		read  bool // the results are read back (domain.Job.ResultsStored)
	}{
		{"no results, html", &domain.Job{ID: "<small & html>", Status: domain.JobRunning, Created: now, Updated: now}, true, false},
		{"no results, over 4 KiB", &domain.Job{ID: big, Status: domain.JobPending, Created: now, Updated: now}, true, false},
		{"completed without results", job("j0", 0), true, false},
		{"one small result", func() *domain.Job { j := job("j1", 1); j.Results[0].Report.Sections = nil; return j }(), true, false},
		{"results past the buffer", job("j2", 12), false, false},
		{"results read back", job("j3", 12), false, true},
		{"one result read back", job("j4", 1), true, true},
	}
	for _, tc := range cases {
		api := toAPIJob(tc.job)
		ours := jobResponse{job: tc.job}
		if tc.read {
			held := *tc.job
			held.Results, held.ResultsStored = nil, true
			ours = jobResponse{job: &held, each: func(fn func(*domain.JobResult) error) error {
				for _, r := range tc.job.Results {
					if err := fn(r); err != nil {
						return err
					}
				}
				return nil
			}}
		}
		for name, visits := range map[string][2]func(http.ResponseWriter) error{
			"createJob": {ours.VisitCreateJobResponse, gen.CreateJob200JSONResponse{Job: api}.VisitCreateJobResponse},
			"getJob":    {ours.VisitGetJobResponse, gen.GetJob200JSONResponse{Job: api}.VisitGetJobResponse},
		} {
			ours, gens := httptest.NewRecorder(), httptest.NewRecorder()
			require.NoError(t, visits[0](ours))
			require.NoError(t, visits[1](gens))
			require.Equal(t, http.StatusOK, ours.Code, tc.name, name)
			require.Equal(t, gens.Body.String(), ours.Body.String(), tc.name, name)
			require.Equal(t, "application/json", ours.Header().Get("Content-Type"), tc.name, name)
			if tc.sized {
				require.Equal(t, strconv.Itoa(ours.Body.Len()), ours.Header().Get("Content-Length"), tc.name, name)
			} else {
				require.Greater(t, ours.Body.Len(), sizedBodyBuffer, tc.name, name)
				require.Empty(t, ours.Header().Get("Content-Length"), tc.name, name)
			}
		}
	}
}

// A report says what it left out: spans, timed hits, both, or nothing.
func TestTruncationMessage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spans, hits bool
		want        string
	}{
		{false, false, ""},
		{true, false, rules.SpansTruncatedMessage},
		{false, true, domain.TimedHitsTruncatedMessage},
		{true, true, rules.SpansTruncatedMessage + "; " + domain.TimedHitsTruncatedMessage},
	}
	for _, tc := range cases {
		rep := toAPIReport(&domain.Job{}, &domain.JobResult{Report: &rules.Report{SpansTruncated: tc.spans, HitsTruncated: tc.hits}})
		if tc.want == "" {
			require.Nil(t, rep.Truncation)
			continue
		}
		require.Equal(t, tc.want, rep.Truncation.Message)
	}
}
