package domain

import (
	"context"
	"time"
)

// BatchState is where a batch job is in its lifecycle. The
// values are the API's BatchJobState names without the prefix, lower case,
// as stored. Every transition is a guarded update in the store (UPDATE ...
// WHERE state = <from>, and for the worker's steps also WHERE lease_owner =
// <owner>), checked first against the transition table below: of two racing
// transitions exactly one takes effect, the other fails with ABORTED, and an
// illegal transition is FAILED_PRECONDITION, never a silent overwrite.
//
//	INITIALIZED -> QUEUED -> PREPROCESSING -> PREPROCESSED -> SUBMITTED ->
//	EVALUATING -> POSTPROCESSING -> POSTPROCESSED -> COMPLETED
//	any non-terminal state -> CANCELLED (cancel request)
//	any non-terminal state -> ERROR (the worker gives up: invalid file,
//	missing file)
type BatchState string

const (
	// BatchInitialized: created, waiting for the input file. Entered on
	// POST /v1/batch-jobs. Left by an upload (-> BatchQueued) or a cancel.
	BatchInitialized BatchState = "initialized"
	// BatchQueued: the input file is stored; waiting for a batch worker.
	// A re-upload keeps the batch here and replaces the file. Left when a
	// worker claims it (-> BatchPreprocessing).
	BatchQueued BatchState = "queued"
	// BatchPreprocessing: a worker parses and validates the whole file
	// (nothing is evaluated yet). Left for BatchPreprocessed (valid) or
	// BatchError (BATCH_JOB_ERROR_INVALID_INPUT_FILE). A worker that
	// crashes here leaves the state; the next one parses again.
	BatchPreprocessing BatchState = "preprocessing"
	// BatchPreprocessed: the file is valid, ItemCount is known. The worker
	// records the items and enqueues one JOB_TYPE_BATCH job per item, in
	// input order, resumably (item rows carry their job ids, job creation
	// is idempotent). Left for BatchSubmitted when every item is enqueued.
	BatchPreprocessed BatchState = "preprocessed"
	// BatchSubmitted: every item is enqueued. Left at once for
	// BatchEvaluating.
	BatchSubmitted BatchState = "submitted"
	// BatchEvaluating: the job workers evaluate the items; the batch worker
	// keeps ProcessedCount and FailedCount up to date. Left for
	// BatchPostprocessing when every item's job is terminal.
	BatchEvaluating BatchState = "evaluating"
	// BatchPostprocessing: the worker writes the output file (JSON Lines in
	// input order) to the blob store, replacing any partial attempt. Left
	// for BatchPostprocessed when the file is stored.
	BatchPostprocessing BatchState = "postprocessing"
	// BatchPostprocessed: the output file is stored. Left at once for
	// BatchCompleted (with the webhook event, in one transaction).
	BatchPostprocessed BatchState = "postprocessed"
	// BatchCompleted: terminal; OutputKey names the output file.
	BatchCompleted BatchState = "completed"
	// BatchError: terminal; ErrorCode and ErrorMessage say why.
	BatchError BatchState = "error"
	// BatchCancelled: terminal; a cancel request stopped the batch. Its
	// items' jobs that had not started are cancelled with it.
	BatchCancelled BatchState = "cancelled"
)

// BatchStates lists every state in lifecycle order.
var BatchStates = []BatchState{
	BatchInitialized, BatchQueued, BatchPreprocessing, BatchPreprocessed, BatchSubmitted,
	BatchEvaluating, BatchPostprocessing, BatchPostprocessed, BatchCompleted, BatchError, BatchCancelled,
}

// Terminal reports whether s is a final state.
func (s BatchState) Terminal() bool {
	return s == BatchCompleted || s == BatchError || s == BatchCancelled
}

// Valid reports whether s is a known state.
func (s BatchState) Valid() bool {
	for _, v := range BatchStates {
		if v == s {
			return true
		}
	}
	return false
}

// batchNext is the forward step of each non-terminal state.
var batchNext = map[BatchState]BatchState{
	BatchInitialized:    BatchQueued,
	BatchQueued:         BatchPreprocessing,
	BatchPreprocessing:  BatchPreprocessed,
	BatchPreprocessed:   BatchSubmitted,
	BatchSubmitted:      BatchEvaluating,
	BatchEvaluating:     BatchPostprocessing,
	BatchPostprocessing: BatchPostprocessed,
	BatchPostprocessed:  BatchCompleted,
}

// CanTransition reports whether from -> to is in the transition table.
func CanTransition(from, to BatchState) bool {
	if from.Terminal() || !from.Valid() || !to.Valid() {
		return false
	}
	if to == BatchCancelled || to == BatchError {
		return true
	}
	return batchNext[from] == to
}

// checkTransition returns FAILED_PRECONDITION for an illegal transition.
func CheckTransition(from, to BatchState) error {
	if !CanTransition(from, to) {
		return Errorf(FailedPrecondition, "a batch job cannot go from %s to %s", from, to)
	}
	return nil
}

// BatchErrorCode is the API's BatchJobErrorCode.
type BatchErrorCode string

// Batch error codes.
const (
	BatchErrUnspecified          BatchErrorCode = "BATCH_JOB_ERROR_UNSPECIFIED"
	BatchErrInvalidInput         BatchErrorCode = "BATCH_JOB_ERROR_INVALID_INPUT_FILE"
	BatchErrInvalidPolicy        BatchErrorCode = "BATCH_JOB_ERROR_INVALID_POLICY"
	BatchErrInvalidPolicyVersion BatchErrorCode = "BATCH_JOB_ERROR_INVALID_POLICY_VERSION"
)

// BatchJob is a bulk evaluation driven by an uploaded input file.
type BatchJob struct {
	ID              string
	AccountID       string
	Name            string
	PolicyID        string
	PolicyKey       string
	PolicyVersionID string
	WebhookURL      string
	State           BatchState
	ErrorCode       BatchErrorCode // set in BatchError
	ErrorMessage    string
	// InputKey is the blob of the current input file ("" before upload).
	InputKey string
	// OutputKey is the blob of the output file (set in BatchPostprocessed).
	OutputKey      string
	ItemCount      int
	ProcessedCount int
	FailedCount    int
	LeaseOwner     string
	LeaseExpiresAt *time.Time
	Created        time.Time
	Updated        time.Time
	Completed      *time.Time // terminal transition
	// Options are the evaluation options of its items' jobs
	// (options.options: the model backend stack, ocr).
	Options map[string]string
}

// BatchItem is one line of a batch's input: its position, ref id and the
// job that evaluates it.
type BatchItem struct {
	BatchID string
	Seq     int // 0-based input order
	RefID   string
	JobID   string
	// JobIndex is the item's entry in its job: runs of text items share a
	// job (BatchConfig.ItemsPerJob), so the queue moves many per claim.
	JobIndex    int
	ContentHash string
	Status      BatchItemStatus
}

// BatchItemStatus is how far an item got in submission.
type BatchItemStatus string

const (
	// BatchItemPending: recorded with its job id; the job may not exist yet
	// (a crash between the two); the next worker creates it.
	BatchItemPending BatchItemStatus = "pending"
	// BatchItemSubmitted: its job exists.
	BatchItemSubmitted BatchItemStatus = "submitted"
)

// BatchOutcome is one item with the state of its job and its own result,
// for the output file.
type BatchOutcome struct {
	Seq         int
	RefID       string
	JobID       string
	ContentHash string
	JobStatus   JobStatus // "" when the job does not exist
	JobError    *JobError
	Result      *JobResult // nil unless the job completed
}

// BatchFilter selects batch jobs of an account; empty fields do not filter.
type BatchFilter struct {
	IDs    []string
	States []BatchState
}

// BatchTransition is one guarded state change and what it records.
type BatchTransition struct {
	ID   string
	From BatchState
	To   BatchState
	// Owner, when set, also requires the batch to be leased to Owner.
	Owner string
	Now   time.Time
	// Optional fields written with the transition.
	ItemCount    *int
	ErrorCode    BatchErrorCode
	ErrorMessage string
	OutputKey    string
	InputKey     string
	// Webhook is enqueued in the same transaction (terminal states).
	Webhook *WebhookEvent
}

// BatchStore persists batch jobs and their items.
type BatchStore interface {
	// CreateBatch inserts b. Codes: ALREADY_EXISTS, NOT_FOUND (account).
	CreateBatch(ctx context.Context, b *BatchJob) error
	// GetBatch returns a batch of the account. Codes: NOT_FOUND (also for
	// another account's batch).
	GetBatch(ctx context.Context, accountID, id string) (*BatchJob, error)
	// GetBatchByID returns a batch of any account (signed URLs carry no
	// account). Codes: NOT_FOUND.
	GetBatchByID(ctx context.Context, id string) (*BatchJob, error)
	// ListBatches returns up to limit batches of the account matching f,
	// newest first.
	ListBatches(ctx context.Context, accountID string, f BatchFilter, limit int) ([]*BatchJob, error)
	// TransitionBatch applies t: UPDATE ... WHERE id AND state = t.From (AND
	// lease_owner = t.Owner), writing the optional fields, setting Completed
	// and clearing the lease on a terminal state, enqueuing t.Webhook, and
	// for BatchCancelled cancelling the batch's jobs that have not started,
	// all in one transaction. Returns the updated batch. Codes: ABORTED when
	// the guard does not hold (state or lease changed), NOT_FOUND.
	TransitionBatch(ctx context.Context, t BatchTransition) (*BatchJob, error)
	// SetBatchInput records key as the input file and moves the batch to
	// BatchQueued, guarded by state IN (initialized, queued). It returns
	// the previous input key. Codes: FAILED_PRECONDITION when processing
	// has started or the batch is terminal, NOT_FOUND.
	SetBatchInput(ctx context.Context, id, key string, now time.Time) (previous string, err error)
	// ClaimBatch leases one batch in a worked state (queued ...
	// postprocessed) whose lease is free or expired at now to owner until
	// until, oldest first. Codes: NOT_FOUND when there is none.
	ClaimBatch(ctx context.Context, owner string, now, until time.Time) (*BatchJob, error)
	// RenewBatchLease extends owner's lease. Codes: ABORTED when owner no
	// longer holds it or the batch is terminal.
	RenewBatchLease(ctx context.Context, id, owner string, until, now time.Time) error
	// ReleaseBatch gives up owner's lease (graceful shutdown). Lost leases
	// are not an error.
	ReleaseBatch(ctx context.Context, id, owner string) error
	// SetBatchProgress writes the counts, guarded by state and owner.
	// Codes: ABORTED.
	SetBatchProgress(ctx context.Context, id, owner string, state BatchState, processed, failed int, now time.Time) error
	// ListAwaitingUpload returns batches still in BatchInitialized created
	// after since (their upload URL may still be used), oldest first.
	ListAwaitingUpload(ctx context.Context, since time.Time, limit int) ([]*BatchJob, error)

	// InsertBatchItems records items, guarded by state and owner (batch in
	// BatchPreprocessed leased to owner). Codes: ABORTED, ALREADY_EXISTS.
	InsertBatchItems(ctx context.Context, batchID, owner string, items []*BatchItem) error
	// MarkBatchItemsSubmitted sets the status of items with seq in
	// [from, to) to submitted, guarded by state BatchPreprocessed and owner.
	// When the batch was cancelled meanwhile it cancels the batch's pending
	// jobs again (jobs created after the cancel) and returns ABORTED.
	MarkBatchItemsSubmitted(ctx context.Context, batchID, owner string, from, to int, now time.Time) error
	// ListBatchItems returns items with Seq >= from, in Seq order.
	ListBatchItems(ctx context.Context, batchID string, from, limit int) ([]*BatchItem, error)
	// BatchProgress counts the items whose job is terminal, and of those the
	// ones that did not complete.
	BatchProgress(ctx context.Context, batchID string) (processed, failed int, err error)
	// ListBatchOutcomes returns items with Seq >= from with their job's
	// status, error and (for completed jobs) the item's result, in Seq order.
	ListBatchOutcomes(ctx context.Context, batchID string, from, limit int) ([]*BatchOutcome, error)
}

// Webhook event types of batch jobs (openapi.yaml createBatchJob).
const (
	WebhookBatchCompleted = "batch_job.completed"
	WebhookBatchFailed    = "batch_job.failed"
	WebhookBatchCancelled = "batch_job.cancelled"
)
