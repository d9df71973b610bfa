package labels

import (
	"context"
	"slices"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/paging"
)

// LabelHitPage is one response of GET /v1/jobs/{jobUuid}/labels.
type LabelHitPage struct {
	Status domain.JobStatus
	// Error is the job's error when it failed.
	Error *domain.JobError
	// Hits is nil while the job is not complete (they are withheld).
	Hits          []*domain.LabelHit
	NextPageToken string
}

// ListJobLabelHitsRequest is the input of ListJobLabelHits.
type ListJobLabelHitsRequest struct {
	JobID       string
	JobResultID string // "" for the hits of every result
	PageSize    *int32
	PageToken   string
}

// ListJobLabelHits returns a page of a job's label hits, for jobs of any
// type of the account. Hits come in the order they were recorded (results in
// order, then the evaluation's order within a result). While the job is not
// complete only its status is returned (with its error when it failed). A
// page token is bound to the account, the job and the jobResultId filter.
// Codes: NOT_FOUND (job, or a jobResultId that is not one of its results),
// INVALID_ARGUMENT (negative pageSize, a token of another request).
func (s *EvaluationService) ListJobLabelHits(ctx context.Context, accountID string, req ListJobLabelHitsRequest) (*LabelHitPage, error) {
	q := paging.Query{SizeField: "pageSize", TokenField: "pageToken", Size: req.PageSize, Token: req.PageToken,
		Default: domain.DefaultLabelHitPageSize, Max: domain.MaxLabelHitPageSize,
		Scope: "jobLabelHits\x00" + accountID + "\x00" + req.JobID + "\x00" + req.JobResultID}
	var j *domain.Job
	check := func() (err error) {
		j, err = s.jobs.GetJob(ctx, accountID, req.JobID)
		return describeJobNotFound(err, req.JobID)
	}
	hits, next, err := paging.Keyset(s.tokens, q, check, func(after *domain.LabelHitCursor, limit int) ([]*domain.LabelHit, error) {
		if j.Status != domain.JobCompleted {
			return nil, nil // only the status is returned
		}
		afterSeq := -1
		if after != nil {
			afterSeq = after.Seq
		}
		hits, err := s.pageOfHits(ctx, j.ID, req.JobResultID, afterSeq, limit)
		if err != nil {
			return nil, err
		}
		// Hits of the job under jobResultId prove it is one of the job's
		// results; only an empty page needs the (costlier) list of results
		// to tell an unknown result from one without hits.
		if req.JobResultID != "" && len(hits) == 0 {
			results, err := s.jobs.ListJobResults(ctx, j.ID)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(results, func(r *domain.JobResult) bool { return r.ID == req.JobResultID }) {
				return nil, domain.Errorf(domain.NotFound, "job result %q not found in job %q", req.JobResultID, req.JobID)
			}
		}
		return hits, nil
	}, func(h *domain.LabelHit) domain.LabelHitCursor { return domain.LabelHitCursor{Seq: h.Seq} })
	if err != nil {
		return nil, err
	}
	page := &LabelHitPage{Status: j.Status}
	switch j.Status {
	case domain.JobFailed:
		page.Error = j.Error
		if page.Error == nil {
			e := domain.ErrJobInternal
			page.Error = &e
		}
	case domain.JobCompleted:
		page.Hits, page.NextPageToken = hits, next
		if page.Hits == nil {
			page.Hits = []*domain.LabelHit{}
		}
	}
	return page, nil
}

// describeJobNotFound gives a job's NOT_FOUND a specific message.
func describeJobNotFound(err error, id string) error {
	if domain.ErrorCode(err) == domain.NotFound {
		return domain.Errorf(domain.NotFound, "job %q not found", id)
	}
	return err
}

// pageOfHits returns up to limit hits after afterSeq. With a result filter
// it reads through the result's index. A job's hits are
// numbered 0, 1, 2, ... as they are recorded, so without a result filter the
// next page is normally the seq range (afterSeq, afterSeq+limit], which is
// read with explicit bounds; a short range (the last page, or gaps) is
// answered by the general query, which then has few rows left to read.
func (s *EvaluationService) pageOfHits(ctx context.Context, jobID, resultID string, afterSeq, limit int) ([]*domain.LabelHit, error) {
	if resultID != "" && s.hitRanges != nil {
		hits, err := s.hitRanges.ListResultHits(ctx, resultID, afterSeq, limit)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			if h.JobID != jobID {
				// Another job's result: none of this job's hits (the caller
				// then finds the result is not the job's).
				return nil, nil
			}
		}
		return hits, nil
	}
	if resultID == "" && s.hitRanges != nil {
		hits, err := s.hitRanges.ListLabelHitsInRange(ctx, jobID, afterSeq, afterSeq+limit)
		if err != nil || len(hits) == limit {
			return hits, err
		}
	}
	return s.jobs.ListLabelHits(ctx, jobID, resultID, afterSeq, limit)
}
