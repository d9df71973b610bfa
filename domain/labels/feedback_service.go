package labels

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/rules"
)

// NewFeedback is the input of CreateFeedback.
type NewFeedback struct {
	JobResultID    string
	ContentHash    string
	Occurrence     *domain.Occurrence
	Label          string
	LabelID        string
	LabelVersionID string
	Expected       domain.EvaluationResult
	Comment        string
}

// FeedbackPage is one page of ListFeedback.
type FeedbackPage struct {
	Annotations   []*domain.FeedbackAnnotation
	NextPageToken string
}

// CreateFeedback records (or replaces) a reviewer's judgement on a result of
// a completed job of the account. jobResultId defaults to the job's only
// result; the label defaults to the label of a label-evaluation job. The
// actual outcome is the job's thresholded result for the label; labelId and
// labelVersionId default to the job's and must otherwise be the account's.
// Codes: NOT_FOUND (job, result, labelId, labelVersionId),
// FAILED_PRECONDITION (job not complete), INVALID_ARGUMENT.
func (s *EvaluationService) CreateFeedback(ctx context.Context, accountID, jobID string, in NewFeedback) (*domain.FeedbackAnnotation, error) {
	switch in.Expected {
	case domain.EvaluationResultUnspecified, domain.EvaluationResultTrue, domain.EvaluationResultFalse:
	default:
		return nil, domain.InvalidField("expectedOutcome", "unknown value")
	}
	if len([]rune(in.Comment)) > domain.MaxFeedbackComment {
		return nil, domain.InvalidField("comment", "must be at most 10000 characters")
	}
	if o := in.Occurrence; o != nil {
		switch o.Modality {
		case domain.ModalityVideo, domain.ModalityAudio, domain.ModalityImage, domain.ModalityText:
		default:
			return nil, domain.InvalidField("target.occurrence.modality", "must name a modality")
		}
		if o.StartMs < 0 || (o.EndMs != nil && *o.EndMs < o.StartMs) {
			return nil, domain.InvalidField("target.occurrence", "startMs must be >= 0 and endMs >= startMs")
		}
	}
	j, err := s.jobs.GetJob(ctx, accountID, jobID)
	if err != nil {
		return nil, describeJobNotFound(err, jobID)
	}
	if j.Status != domain.JobCompleted {
		return nil, domain.Errorf(domain.FailedPrecondition, "job %q is not complete; feedback needs its results", jobID)
	}
	results, err := s.jobs.ListJobResults(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	var res *domain.JobResult
	switch {
	case in.JobResultID != "":
		for _, r := range results {
			if r.ID == in.JobResultID {
				res = r
			}
		}
		if res == nil {
			return nil, domain.Errorf(domain.NotFound, "job result %q not found in job %q", in.JobResultID, jobID)
		}
	case len(results) == 1:
		res = results[0]
	default:
		return nil, domain.InvalidField("jobResultId", "is required: the job has several results")
	}
	hash := in.ContentHash
	if hash == "" {
		hash = res.ContentHash
	} else if res.ContentHash != "" && hash != res.ContentHash {
		return nil, domain.InvalidField("target.contentHash", "is not the content hash of the result")
	}
	label := in.Label
	if label == "" && j.LabelID != "" && res.Report != nil && len(res.Report.Sections) == 1 {
		label = res.Report.Sections[0].Name
	}
	if label == "" {
		return nil, domain.InvalidField("label", "is required")
	}
	actual := domain.EvaluationResultUnspecified
	if res.Report != nil {
		found := false
		for _, sec := range res.Report.Sections {
			if sec.Name != label {
				continue
			}
			found = true
			switch sec.Result {
			case rules.OutcomeTrue:
				actual = domain.EvaluationResultTrue
			case rules.OutcomeFalse:
				actual = domain.EvaluationResultFalse
			}
		}
		if !found {
			return nil, domain.InvalidField("label", "is not a label of the result's report")
		}
	}
	labelID, versionID, err := s.feedbackLabelIDs(ctx, accountID, j, in)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	a := &domain.FeedbackAnnotation{
		ID: domain.NewID(), AccountID: accountID, JobID: j.ID, JobResultID: res.ID, ContentHash: hash,
		Occurrence: in.Occurrence, Label: label, LabelID: labelID, LabelVersionID: versionID,
		Expected: in.Expected, Actual: actual, Comment: in.Comment, Created: now, Updated: now,
	}
	if err := s.feedback.UpsertFeedback(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// feedbackLabelIDs resolves the label ids an annotation records: the ones
// given, which must be the account's and agree with each other (a version
// given alone names its label), else the job's own. The stored ids are
// returned to the account and joined by its quality tools, so another
// account's would leak into them. Codes: NOT_FOUND naming labelId or
// labelVersionId.
func (s *EvaluationService) feedbackLabelIDs(ctx context.Context, accountID string, j *domain.Job, in NewFeedback) (labelID, versionID string, err error) {
	labelID, versionID = in.LabelID, in.LabelVersionID
	if labelID != "" {
		if _, err := s.labels.GetLabel(ctx, accountID, labelID); err != nil {
			return "", "", domain.DescribeNotFound(err, "labelId %q not found", labelID)
		}
	}
	switch {
	case versionID != "" && labelID == "":
		v, err := s.versions.FindLabelVersion(ctx, accountID, versionID)
		if err != nil {
			return "", "", domain.DescribeNotFound(err, "labelVersionId %q not found", versionID)
		}
		labelID = v.LabelID
	case versionID != "":
		if _, err := s.versions.GetLabelVersion(ctx, accountID, labelID, versionID); err != nil {
			return "", "", domain.DescribeNotFound(err, "labelVersionId %q is not a version of label %q", versionID, labelID)
		}
	case labelID == "":
		labelID, versionID = j.LabelID, j.LabelVersionID
	case labelID == j.LabelID:
		// The job's version goes with the job's label only.
		versionID = j.LabelVersionID
	}
	return labelID, versionID, nil
}

// ListFeedback returns a page of a job's feedback, oldest first by first
// submission, then id. Codes: NOT_FOUND (job), INVALID_ARGUMENT (negative
// page_size, a token of another request).
func (s *EvaluationService) ListFeedback(ctx context.Context, accountID, jobID string, pageSize *int32, pageToken string) (*FeedbackPage, error) {
	q := paging.Query{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: domain.DefaultFeedbackPageSize, Max: domain.MaxFeedbackPageSize, Scope: "feedback\x00" + accountID + "\x00" + jobID}
	check := func() error {
		_, err := s.jobs.GetJob(ctx, accountID, jobID)
		return describeJobNotFound(err, jobID)
	}
	as, next, err := paging.Keyset(s.tokens, q, check, func(after *domain.FeedbackCursor, limit int) ([]*domain.FeedbackAnnotation, error) {
		return s.feedback.ListFeedback(ctx, accountID, jobID, after, limit)
	}, func(a *domain.FeedbackAnnotation) domain.FeedbackCursor {
		return domain.FeedbackCursor{Created: a.Created, ID: a.ID}
	})
	if err != nil {
		return nil, err
	}
	return &FeedbackPage{Annotations: as, NextPageToken: next}, nil
}
