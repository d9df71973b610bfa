package domain

import (
	"context"
	"slices"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// Dataset limits (docs/api.md#extension-endpoints).
const (
	MaxExamplesPerCall  = 1000
	MaxExamplesPerLabel = 10000
	MaxExampleNote      = 10000 // characters
	DefaultExamplesPage = 100
	MaxExamplesPage     = 1000
	// MaxExamplesPageBytes bounds the content a page of examples (or a
	// chunk of a run, read at once) holds: a page of 1,000 images could
	// otherwise be 20 GiB.
	MaxExamplesPageBytes = 16 << 20
	// MaxActiveDatasetRuns bounds the runs of one label that are pending or
	// running at once: each holds a snapshot of up to 10,000 examples and
	// queues their evaluation.
	MaxActiveDatasetRuns = 5
)

// Internal job types: queued work that is not a client's job. They share
// the jobs table, and so the durable, fairly shared queue (docs/operations.md#scaling),
// with the jobs clients submit, but the job endpoints never show them.
const (
	// JobTypeDatasetRun evaluates one chunk of a dataset run's examples.
	JobTypeDatasetRun JobType = "dataset_run"
	// JobTypeShadow evaluates a completed job's content with its policy's
	// shadow version.
	JobTypeShadow JobType = "shadow"
)

// InternalJobTypes lists the internal job types.
var InternalJobTypes = []JobType{JobTypeDatasetRun, JobTypeShadow}

// Internal reports whether jobs of type t are internal work.
func (t JobType) Internal() bool { return slices.Contains(InternalJobTypes, t) }

// DatasetExample is one test item of a label: content and the outcome the
// label should give it. Examples are unversioned and outlive versions.
// Content is text, or image bytes (an image URL is fetched on creation).
type DatasetExample struct {
	ID          string
	AccountID   string
	LabelID     string
	Content     ContentItem
	ContentHash string
	Expected    EvaluationResult // TRUE or FALSE
	Note        string
	Created     time.Time
}

// DatasetRunState is where a dataset run is: pending (queued) -> running
// (a chunk is done) -> completed | failed (every chunk is done; failed when
// a chunk could not be evaluated at all).
type DatasetRunState string

// Dataset run states, as stored.
const (
	DatasetRunPending   DatasetRunState = "pending"
	DatasetRunRunning   DatasetRunState = "running"
	DatasetRunCompleted DatasetRunState = "completed"
	DatasetRunFailed    DatasetRunState = "failed"
)

// Confusion is a confusion matrix of binary outcomes against expectations.
type Confusion struct {
	TruePositives, FalsePositives, TrueNegatives, FalseNegatives int
}

// Precision is TP/(TP+FP); ok is false when the denominator is 0.
func (c Confusion) Precision() (v float64, ok bool) {
	return ratio(c.TruePositives, c.TruePositives+c.FalsePositives)
}

// Recall is TP/(TP+FN); ok is false when the denominator is 0.
func (c Confusion) Recall() (v float64, ok bool) {
	return ratio(c.TruePositives, c.TruePositives+c.FalseNegatives)
}

// F1 is the harmonic mean of precision and recall, 2TP/(2TP+FP+FN); ok is
// false when the denominator is 0.
func (c Confusion) F1() (v float64, ok bool) {
	return ratio(2*c.TruePositives, 2*c.TruePositives+c.FalsePositives+c.FalseNegatives)
}

// Accuracy is (TP+TN)/(TP+FP+TN+FN); ok is false when the denominator is 0.
func (c Confusion) Accuracy() (v float64, ok bool) {
	return ratio(c.TruePositives+c.TrueNegatives, c.TruePositives+c.FalsePositives+c.TrueNegatives+c.FalseNegatives)
}

// Add counts one judged outcome: actual against expected.
func (c *Confusion) Add(expected, actual bool) {
	switch {
	case expected && actual:
		c.TruePositives++
	case !expected && actual:
		c.FalsePositives++
	case !expected && !actual:
		c.TrueNegatives++
	default:
		c.FalseNegatives++
	}
}

func ratio(n, d int) (float64, bool) {
	if d == 0 {
		return 0, false
	}
	return float64(n) / float64(d), true
}

// DatasetRun is one evaluation of a label version over its label's
// examples, as they were when the run was created.
type DatasetRun struct {
	ID             string
	AccountID      string
	LabelID        string
	LabelVersionID string
	State          DatasetRunState
	Threshold      float64
	ExampleCount   int
	Confusion
	// Failed counts examples whose evaluation failed (a signal could not be
	// evaluated, the precheck refused an image, the example was deleted).
	Failed    int
	Created   time.Time
	Updated   time.Time
	Completed *time.Time
}

// DatasetRunItem is one example of a run's snapshot, with its content when
// the example still exists (nil once deleted).
type DatasetRunItem struct {
	Seq       int
	ExampleID string
	Expected  EvaluationResult
	Example   *DatasetExample
}

// DatasetRunResult is the evaluation of one example in a run.
type DatasetRunResult struct {
	Seq       int
	ExampleID string
	Expected  EvaluationResult
	// Outcome is the label's outcome: TRUE, FALSE, or FAILED (Error says
	// why when the example could not be evaluated at all).
	Outcome rules.Outcome
	Score   float64
	Report  *rules.Report
	Error   string
}

// DatasetRunChange is an example whose outcome differs between two runs.
type DatasetRunChange struct {
	Seq         int
	ExampleID   string
	Expected    EvaluationResult
	BaseOutcome rules.Outcome
	Outcome     rules.Outcome
}

// DatasetRunCursor is the keyset position of a run listing (newest first).
type DatasetRunCursor struct {
	Created time.Time `json:"c"`
	ID      string    `json:"i"`
}

// DatasetStore persists dataset examples and runs. Every read and write is
// scoped to the account: another account's label, example or run is
// NOT_FOUND.
type DatasetStore interface {
	// CreateExamples inserts examples (all of the account's label labelID)
	// in one transaction. Codes: NOT_FOUND (label missing, deleted or
	// another account's), INVALID_ARGUMENT naming "examples" when the label
	// would hold more than maxPerLabel.
	CreateExamples(ctx context.Context, accountID, labelID string, examples []*DatasetExample, maxPerLabel int) error
	// ListExamples returns up to limit examples of the label with id >
	// afterID, in id order, and whether more follow. It returns fewer
	// (at least one) rather than more than maxBytes of content.
	ListExamples(ctx context.Context, accountID, labelID, afterID string, limit, maxBytes int) ([]*DatasetExample, bool, error)
	// DeleteExample deletes one example. Codes: NOT_FOUND.
	DeleteExample(ctx context.Context, accountID, labelID, id string) error

	// CreateDatasetRun inserts run, snapshots the label's examples (in id
	// order) as its items, and queues one job per chunk of up to chunkSize
	// items, made by chunkJob(from, to) for the items [from, to), all in one
	// transaction; it sets run.ExampleCount. A run without examples is
	// created completed. Codes: NOT_FOUND (label), FAILED_PRECONDITION when
	// the label has maxActive runs pending or running.
	CreateDatasetRun(ctx context.Context, run *DatasetRun, chunkSize, maxActive int, chunkJob func(from, to int) *Job) error
	// GetDatasetRun returns a run of the account's label. Codes: NOT_FOUND.
	GetDatasetRun(ctx context.Context, accountID, labelID, id string) (*DatasetRun, error)
	// ListDatasetRuns returns up to limit runs of the label, newest first,
	// after the cursor when one is given.
	ListDatasetRuns(ctx context.Context, accountID, labelID string, after *DatasetRunCursor, limit int) ([]*DatasetRun, error)
	// DatasetRunItems returns the run's items with from <= seq < to, in
	// seq order, with the examples that still exist; fewer (at least one,
	// from `from` on) rather than more than maxBytes of content.
	DatasetRunItems(ctx context.Context, runID string, from, to, maxBytes int) ([]*DatasetRunItem, error)
	// FinishDatasetRunChunk records a chunk: it finishes job jobID (held by
	// owner), inserts the chunk's results, adds their counts to the run and,
	// when it was the run's last chunk, completes the run (failed when
	// gaveUp was set by this or an earlier chunk), in one transaction.
	// Codes: ABORTED when owner no longer holds the job (nothing is
	// recorded).
	FinishDatasetRunChunk(ctx context.Context, jobID, owner, runID string, results []*DatasetRunResult, gaveUp bool, now time.Time) error
	// YieldDatasetRunChunk records the results of a chunk's first examples
	// and returns job jobID (held by owner) to the queue with options, which
	// say where the rest of the chunk starts, in one transaction. The claim
	// is not counted in the job's Attempts. Codes: ABORTED when owner no
	// longer holds the job (nothing is recorded).
	YieldDatasetRunChunk(ctx context.Context, jobID, owner, runID string, results []*DatasetRunResult, options map[string]string, now time.Time) error
	// ListDatasetRunResults returns up to limit results of the run with
	// seq > afterSeq, in seq order.
	ListDatasetRunResults(ctx context.Context, runID string, afterSeq, limit int) ([]*DatasetRunResult, error)
	// CompareDatasetRuns returns up to limit examples evaluated in both
	// runs whose outcomes differ, with seq (in run runID) > afterSeq, in
	// seq order.
	CompareDatasetRuns(ctx context.Context, runID, baseRunID string, afterSeq, limit int) ([]*DatasetRunChange, error)
}
