package jobs

import (
	"context"

	"github.com/contenteval/contenteval/domain"
)

// storeWeight is the weight (outcomeWeight) of evaluated results past
// which a running job stores them before it goes on. A report of hundreds
// of sections, each with its rules and spans, takes hundreds of KiB in
// memory: a job of 100 such items held 22 MiB of reports to its end, and
// as many concurrent jobs as that. Stored as it goes, a job holds about
// this much; the common job, a few small reports, is stored once, at its
// end, as before.
const storeWeight = 4096

// resultsPage is how many stored results EachResult reads at once.
const resultsPage = 4

// outcomeWeight is about how much results and hits hold: one for each
// section, rule and span of a report, and for each hit and its spans.
func outcomeWeight(results []*domain.JobResult, hits []*domain.LabelHit) int {
	w := len(results) + len(hits)
	for _, r := range results {
		if r.Report == nil {
			continue
		}
		for _, sec := range r.Report.Sections {
			w += 1 + len(sec.Matches) + len(sec.Assertions)
			for _, a := range sec.Assertions {
				w += len(a.FlaggedSpans())
			}
		}
	}
	for _, h := range hits {
		w += len(h.Spans)
	}
	return w
}

// storeAsItGoes stores the results and hits of j, a running job this
// process holds, when they weigh storeWeight or more, and then drops their
// reports from results: j's results are read back from the store
// (Job.ResultsStored). A job with a shadow evaluation to queue keeps them,
// since that evaluation is given every report's outcomes at the end. It
// reports whether it stored them.
func (s *Service) storeAsItGoes(ctx context.Context, j *domain.Job, results []*domain.JobResult, hits []*domain.LabelHit) (bool, error) {
	if len(j.Then) > 0 || outcomeWeight(results, hits) < storeWeight {
		return false, nil
	}
	if err := s.jobs.SaveJobResults(ctx, j.ID, j.LeaseOwner, results, hits); err != nil {
		return false, err
	}
	for i, r := range results {
		stored := *r
		stored.Report = nil
		results[i] = &stored
	}
	j.ResultsStored = true
	return true, nil
}

// EachResult calls fn with each result of job id, in entry order, reading
// a few at a time: the answer for a job whose results are stored
// (Job.ResultsStored), whose reports are not all held at once.
func (s *Service) EachResult(ctx context.Context, jobID string, fn func(*domain.JobResult) error) error {
	after := -1
	for {
		page, err := s.jobs.ListJobResultsAfter(ctx, jobID, after, resultsPage)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
			after = r.Index
		}
		if len(page) < resultsPage {
			return nil
		}
	}
}
