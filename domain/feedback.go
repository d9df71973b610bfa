package domain

import (
	"context"
	"strconv"
	"time"
)

// EvaluationResult is the API's EvaluationResult.
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

// Feedback page sizes (docs/api.md#paging).
const (
	DefaultFeedbackPageSize = 1000
	MaxFeedbackPageSize     = 1000
	MaxFeedbackComment      = 10000
)
