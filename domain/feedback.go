package domain

import (
	"context"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// EvaluationResult is the API's EvaluationResult (DESIGN §7).
type EvaluationResult string

// Evaluation results.
const (
	EvaluationResultUnspecified EvaluationResult = "EVALUATION_RESULT_UNSPECIFIED"
	EvaluationResultTrue        EvaluationResult = "EVALUATION_RESULT_TRUE"
	EvaluationResultFalse       EvaluationResult = "EVALUATION_RESULT_FALSE"
)

// Occurrence is a timed occurrence of a label in a video or audio result.
type Occurrence struct {
	Modality Modality
	StartMs  int64
	EndMs    *int64
}

// FeedbackAnnotation is a reviewer's judgement on one label of one job
// result: on the content as a whole, or on one occurrence of timed media.
// There is one annotation per (job result, content or occurrence, label);
// posting again replaces ExpectedOutcome, ActualOutcome, Comment and the
// label ids, and keeps ID and Created, hence the position in the ordering.
type FeedbackAnnotation struct {
	ID             string
	AccountID      string
	JobID          string
	JobResultID    string
	ContentHash    string
	Occurrence     *Occurrence
	Label          string
	LabelID        string
	LabelVersionID string
	Expected       EvaluationResult
	// Actual is the job's thresholded section (label) result, computed by the
	// server.
	Actual  EvaluationResult
	Comment string
	Created time.Time
	Updated time.Time
}

// TargetKey identifies the annotated content or occurrence within a result.
func (a *FeedbackAnnotation) TargetKey() string {
	if a.Occurrence == nil {
		return a.ContentHash
	}
	k := a.ContentHash + "|" + string(a.Occurrence.Modality) + "|" + strconv.FormatInt(a.Occurrence.StartMs, 10) + "|"
	if a.Occurrence.EndMs != nil {
		k += strconv.FormatInt(*a.Occurrence.EndMs, 10)
	}
	return k
}

// FeedbackCursor is the keyset position in a job's feedback (oldest first).
type FeedbackCursor struct {
	Created time.Time `json:"c"`
	ID      string    `json:"i"`
}

// FeedbackStore persists feedback annotations.
type FeedbackStore interface {
	// UpsertFeedback inserts a, or when an annotation of the same job, result,
	// target and label exists, replaces its expected and actual outcomes,
	// comment, label ids and Updated; either way a.ID and a.Created are set
	// to the stored annotation's.
	UpsertFeedback(ctx context.Context, a *FeedbackAnnotation) error
	// ListFeedback returns up to limit annotations of the account's job,
	// oldest first (created, then id), after the cursor when it is set.
	ListFeedback(ctx context.Context, accountID, jobID string, after *FeedbackCursor, limit int) ([]*FeedbackAnnotation, error)
}

// Feedback page sizes (SPEC.md Limits).
const (
	DefaultFeedbackPageSize = 1000
	MaxFeedbackPageSize     = 1000
	maxFeedbackComment      = 10000
)

// NewFeedback is the input of CreateFeedback.
type NewFeedback struct {
	JobResultID    string
	ContentHash    string
	Occurrence     *Occurrence
	Label          string
	LabelID        string
	LabelVersionID string
	Expected       EvaluationResult
	Comment        string
}

// FeedbackPage is one page of ListFeedback.
type FeedbackPage struct {
	Annotations   []*FeedbackAnnotation
	NextPageToken string
}

// CreateFeedback records (or replaces) a reviewer's judgement on a result of
// a completed job of the account. jobResultId defaults to the job's only
// result; the label defaults to the label of a label-evaluation job. The
// actual outcome is the job's thresholded result for the label; labelId and
// labelVersionId default to the job's and must otherwise be the account's.
// Codes: NOT_FOUND (job, result, labelId, labelVersionId),
// FAILED_PRECONDITION (job not complete), INVALID_ARGUMENT.
func (s *LabelEvaluationService) CreateFeedback(ctx context.Context, accountID, jobID string, in NewFeedback) (*FeedbackAnnotation, error) {
	switch in.Expected {
	case EvaluationResultUnspecified, EvaluationResultTrue, EvaluationResultFalse:
	default:
		return nil, InvalidField("expectedOutcome", "unknown value")
	}
	if len([]rune(in.Comment)) > maxFeedbackComment {
		return nil, InvalidField("comment", "must be at most 10000 characters")
	}
	if o := in.Occurrence; o != nil {
		switch o.Modality {
		case ModalityVideo, ModalityAudio, ModalityImage, ModalityText:
		default:
			return nil, InvalidField("target.occurrence.modality", "must name a modality")
		}
		if o.StartMs < 0 || (o.EndMs != nil && *o.EndMs < o.StartMs) {
			return nil, InvalidField("target.occurrence", "startMs must be >= 0 and endMs >= startMs")
		}
	}
	j, err := s.jobs.GetJob(ctx, accountID, jobID)
	if err != nil {
		return nil, describeJobNotFound(err, jobID)
	}
	if j.Status != JobCompleted {
		return nil, Errorf(FailedPrecondition, "job %q is not complete; feedback needs its results", jobID)
	}
	results, err := s.jobs.ListJobResults(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	var res *JobResult
	switch {
	case in.JobResultID != "":
		for _, r := range results {
			if r.ID == in.JobResultID {
				res = r
			}
		}
		if res == nil {
			return nil, Errorf(NotFound, "job result %q not found in job %q", in.JobResultID, jobID)
		}
	case len(results) == 1:
		res = results[0]
	default:
		return nil, InvalidField("jobResultId", "is required: the job has several results")
	}
	hash := in.ContentHash
	if hash == "" {
		hash = res.ContentHash
	} else if res.ContentHash != "" && hash != res.ContentHash {
		return nil, InvalidField("target.contentHash", "is not the content hash of the result")
	}
	label := in.Label
	if label == "" && j.LabelID != "" && res.Report != nil && len(res.Report.Sections) == 1 {
		label = res.Report.Sections[0].Name
	}
	if label == "" {
		return nil, InvalidField("label", "is required")
	}
	actual := EvaluationResultUnspecified
	if res.Report != nil {
		found := false
		for _, sec := range res.Report.Sections {
			if sec.Name != label {
				continue
			}
			found = true
			switch sec.Result {
			case rules.OutcomeTrue:
				actual = EvaluationResultTrue
			case rules.OutcomeFalse:
				actual = EvaluationResultFalse
			}
		}
		if !found {
			return nil, InvalidField("label", "is not a label of the result's report")
		}
	}
	labelID, versionID, err := s.feedbackLabelIDs(ctx, accountID, j, in)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	a := &FeedbackAnnotation{
		ID: NewID(), AccountID: accountID, JobID: j.ID, JobResultID: res.ID, ContentHash: hash,
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
func (s *LabelEvaluationService) feedbackLabelIDs(ctx context.Context, accountID string, j *Job, in NewFeedback) (labelID, versionID string, err error) {
	labelID, versionID = in.LabelID, in.LabelVersionID
	if labelID != "" {
		if _, err := s.labels.GetLabel(ctx, accountID, labelID); err != nil {
			return "", "", describeNotFound(err, "labelId %q not found", labelID)
		}
	}
	switch {
	case versionID != "" && labelID == "":
		v, err := s.versions.FindLabelVersion(ctx, accountID, versionID)
		if err != nil {
			return "", "", describeNotFound(err, "labelVersionId %q not found", versionID)
		}
		labelID = v.LabelID
	case versionID != "":
		if _, err := s.versions.GetLabelVersion(ctx, accountID, labelID, versionID); err != nil {
			return "", "", describeNotFound(err, "labelVersionId %q is not a version of label %q", versionID, labelID)
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
func (s *LabelEvaluationService) ListFeedback(ctx context.Context, accountID, jobID string, pageSize *int32, pageToken string) (*FeedbackPage, error) {
	q := PageQuery{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: DefaultFeedbackPageSize, Max: MaxFeedbackPageSize, Scope: "feedback\x00" + accountID + "\x00" + jobID}
	check := func() error {
		_, err := s.jobs.GetJob(ctx, accountID, jobID)
		return describeJobNotFound(err, jobID)
	}
	as, next, err := keysetPage(s.tokens, q, check, func(after *FeedbackCursor, limit int) ([]*FeedbackAnnotation, error) {
		return s.feedback.ListFeedback(ctx, accountID, jobID, after, limit)
	}, func(a *FeedbackAnnotation) FeedbackCursor { return FeedbackCursor{Created: a.Created, ID: a.ID} })
	if err != nil {
		return nil, err
	}
	return &FeedbackPage{Annotations: as, NextPageToken: next}, nil
}
