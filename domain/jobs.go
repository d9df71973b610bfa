package domain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// JobStatus is where a job is in its lifecycle. Every transition is a guarded
// update in the store (WHERE status = ... AND lease_owner = ...), so of two
// racing transitions exactly one takes effect and the other is a no-op that
// reports ABORTED.
type JobStatus string

const (
	// JobPending: an asynchronous job waiting in the queue. Entered on
	// submission (POST /v1/jobs without waitForCompletion) and when a worker
	// shutting down gracefully releases a job it held. Left when a worker
	// claims it (-> JobRunning).
	JobPending JobStatus = "pending"
	// JobRunning: a worker or the submitting request holds the job's lease and
	// evaluates it. Entered by a claim, or directly on submission for
	// synchronous and streamed jobs (the submitting process is the owner).
	// Left by the lease owner only: -> JobCompleted, JobFailed or JobCanceled,
	// or back to JobPending on graceful release. A lease that expires (the
	// owner crashed) lets another worker claim the job again (-> JobRunning
	// with a new owner); the old owner's late transitions are then no-ops.
	JobRunning JobStatus = "running"
	// JobCompleted: every entry was evaluated; results are stored. Terminal.
	JobCompleted JobStatus = "completed"
	// JobFailed: the job ended without results; Error says why. Terminal.
	JobFailed JobStatus = "failed"
	// JobCanceled: the client went away (a stream closed early). Terminal.
	JobCanceled JobStatus = "canceled"
)

// Terminal reports whether s is a final status.
func (s JobStatus) Terminal() bool {
	return s == JobCompleted || s == JobFailed || s == JobCanceled
}

// JobType is the API's JobType.
type JobType string

// Job types: the kinds of queued work, of clients and internal.
const (
	JobTypeStandard JobType = "JOB_TYPE_STANDARD"
	JobTypeBatch    JobType = "JOB_TYPE_BATCH"
	JobTypeFree     JobType = "JOB_TYPE_FREE"
	JobTypeTest     JobType = "JOB_TYPE_TEST"
)

// JobErrorReason is the API's JobErrorReason.
type JobErrorReason string

// Job error reasons, every one the API names, in one place.
const (
	ReasonJobFailed                 JobErrorReason = "JOB_ERROR_REASON_JOB_FAILED"
	ReasonExecutionDeadlineExceeded JobErrorReason = "JOB_ERROR_REASON_EXECUTION_DEADLINE_EXCEEDED"
	ReasonAdmissionQueueTimeout     JobErrorReason = "JOB_ERROR_REASON_ADMISSION_QUEUE_TIMEOUT"
	ReasonQuotaExceeded             JobErrorReason = "JOB_ERROR_REASON_QUOTA_EXCEEDED"

	// Prechecks of images and video frames.
	ReasonContentBlocked        JobErrorReason = "JOB_ERROR_REASON_CONTENT_BLOCKED"
	ReasonContentPrecheckFailed JobErrorReason = "JOB_ERROR_REASON_CONTENT_PRECHECK_FAILED"

	// Timed media (video and audio).
	ReasonVideoValidationFailure    JobErrorReason = "JOB_ERROR_REASON_VIDEO_VALIDATION_FAILURE"
	ReasonVideoSceneCeilingExceeded JobErrorReason = "JOB_ERROR_REASON_VIDEO_SCENE_CEILING_EXCEEDED"
	ReasonHLSRemuxTimeoutExhausted  JobErrorReason = "JOB_ERROR_REASON_HLS_REMUX_TIMEOUT_EXHAUSTED"
	ReasonTranscriptArtifactInvalid JobErrorReason = "JOB_ERROR_REASON_TRANSCRIPT_CHUNK_ARTIFACT_INVALID"
	ReasonVideoSourceUnreachable    JobErrorReason = "JOB_ERROR_REASON_VIDEO_SOURCE_UNREACHABLE"
)

// JobError is a terminal failure with a fixed, client-safe message.
type JobError struct {
	Reason  JobErrorReason
	Message string
}

// The fixed job errors.
var (
	ErrJobDeadline = JobError{ReasonExecutionDeadlineExceeded, "The job overran its execution deadline."}
	// ErrJobItemDeadline: one content item overran its own budget
	// (--item-deadline), however much of the job's deadline was left.
	ErrJobItemDeadline = JobError{ReasonExecutionDeadlineExceeded, "A content item overran its evaluation time budget."}
	ErrJobAdmission    = JobError{ReasonAdmissionQueueTimeout, "The job timed out waiting to be admitted."}
	ErrJobQuota        = JobError{ReasonQuotaExceeded, "The account's daily evaluation quota ran out before the job could start."}
	ErrJobInternal     = JobError{ReasonJobFailed, "The job failed."}
	ErrJobNoImage      = JobError{ReasonJobFailed, "Image evaluation is not available yet; this job contains an image entry."}
	ErrJobNoMedia      = JobError{ReasonJobFailed, "Video and audio evaluation are not available yet; this job contains a video or audio entry."}
)

// ContentKind says which field of a content entry carries the content.
type ContentKind string

// Content kinds: what one contentData entry carries.
const (
	ContentText     ContentKind = "text"
	ContentImage    ContentKind = "image"
	ContentImageURL ContentKind = "imageUrl"
	ContentVideoURL ContentKind = "videoUrl"
	ContentAudioURL ContentKind = "audioUrl"
	ContentVideo    ContentKind = "video"
	ContentAudio    ContentKind = "audio"
)

// ContentInput is one contentData entry as the client sent it: any number of
// fields may be set; validation requires exactly one content field.
type ContentInput struct {
	Text, ImageURL, VideoURL, AudioURL, Captions *string
	Image, Video, Audio                          *[]byte
	Metadata                                     map[string]string
}

// ContentItem is one validated content entry, as stored with the job for its
// worker.
type ContentItem struct {
	Kind     ContentKind       `json:"kind"`
	Text     string            `json:"text,omitempty"`
	Bytes    []byte            `json:"bytes,omitempty"`
	URL      string            `json:"url,omitempty"`
	Captions string            `json:"captions,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ContentSummary is what a job shows of one entry.
type ContentSummary struct {
	ContentHash string            `json:"contentHash,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// Webhook is the completion callback of a job, delivered by the webhook
// outbox (a later issue); the job only records it.
type Webhook struct {
	URL          string
	ExtraHeaders map[string]string
}

// Job is one evaluation run.
type Job struct {
	ID              string
	AccountID       string
	Type            JobType
	Status          JobStatus
	PolicyID        string
	PolicyKey       string
	PolicyVersionID string
	LabelID         string
	LabelVersionID  string
	Threshold       float64
	Expedited       bool
	Options         map[string]string
	Input           []ContentItem
	Contents        []ContentSummary
	Webhook         *Webhook
	Error           *JobError // set when Status is JobFailed
	LeaseOwner      string
	LeaseExpiresAt  *time.Time
	Attempts        int
	// Yields counts the times a worker gave the job back to the queue for
	// another account between two items (JobStore.YieldJob): the results
	// of its first items are stored.
	Yields    int
	Created   time.Time
	Updated   time.Time
	Started   *time.Time // first claim
	Completed *time.Time // terminal transition
	// Results are filled by JobService.Get for completed jobs only.
	Results []*JobResult
	// ResultsStored is set on a job that completed in this process with
	// its results stored as it went and not held (Results is nil): they are
	// read from the store a few at a time (jobs.Service.EachResult).
	ResultsStored bool
	// Then are jobs queued in the transaction that records this job as
	// completed (FinishJob's then, CreateFinishedJob): the evaluation of
	// its content by its policy's shadow version. Not stored with the job.
	Then []*Job
	// TraceParent and TraceState are the W3C trace context of the request
	// that queued the job, stored with it (JobStore.CreateJob takes ctx's
	// when they are empty) so that the worker that claims it continues
	// that trace. Empty when tracing was off.
	TraceParent string
	TraceState  string
}

// JobResult is the evaluation of one content entry.
type JobResult struct {
	ID          string
	JobID       string
	Index       int
	ContentHash string
	Metadata    map[string]string
	Report      *rules.Report
	Error       *JobError
	Created     time.Time
}

// Modality is the API's Modality.
type Modality string

// Modalities of label hits.
const (
	ModalityText  Modality = "MODALITY_TEXT"
	ModalityImage Modality = "MODALITY_IMAGE"
	ModalityVideo Modality = "MODALITY_VIDEO"
	ModalityAudio Modality = "MODALITY_AUDIO"
)

// LabelHit is one occurrence of a TRUE label in a job result. Seq orders the
// hits of a job: results in recorded order, then hits in evaluation order.
type LabelHit struct {
	JobID             string
	JobResultID       string
	Seq               int
	Label             string
	Modality          Modality
	Score             float64
	StartMs           int64
	EndMs             *int64
	FrameStartMs      *int64
	FrameEndMs        *int64
	TranscriptStartMs *int64
	TranscriptEndMs   *int64
	// Spans are where the label's rules matched the text the hit is of (the
	// item's, an image's OCR text, a transcript chunk's); nil for hits of
	// frames and hashes.
	Spans []rules.TextSpan
}

// TimeRange bounds a timestamp; a nil bound is open. Bounds are exclusive
// unless Inclusive.
type TimeRange struct {
	Start     *time.Time `json:"s,omitempty"`
	End       *time.Time `json:"e,omitempty"`
	Inclusive bool       `json:"i,omitempty"`
}

// JobFilter selects jobs of an account; zero fields do not filter.
type JobFilter struct {
	Status    JobStatus `json:"st,omitempty"`
	PolicyID  string    `json:"p,omitempty"`
	Created   TimeRange `json:"c"`
	Updated   TimeRange `json:"u"`
	Completed TimeRange `json:"d"`
}

// JobCursor is the keyset position of a job listing (newest first).
type JobCursor struct {
	Created time.Time `json:"c"`
	ID      string    `json:"i"`
}

// AccountLoad is an account's share of the queue's workers.
type AccountLoad struct {
	AccountID string
	Running   int  // jobs under a live lease, whoever holds it
	Mine      int  // of those, held by the asking process
	Queued    bool // it has claimable jobs
}

// JobStore persists jobs, their results and label hits, and is the work
// queue.
type JobStore interface {
	// CreateJob inserts j as given (pending, or running with a lease).
	// Codes: ALREADY_EXISTS, NOT_FOUND (unknown account).
	CreateJob(ctx context.Context, j *Job) error
	// GetJob returns a job of the account, without results. Codes: NOT_FOUND
	// (also for another account's job, and for an internal job, which the
	// job endpoints never show).
	GetJob(ctx context.Context, accountID, id string) (*Job, error)
	// ListJobs returns up to limit jobs of the account matching f, newest
	// first (created, id descending), after the cursor when one is given.
	ListJobs(ctx context.Context, accountID string, f JobFilter, after *JobCursor, limit int) ([]*Job, error)
	// ListJobResults returns a job's results in entry order.
	ListJobResults(ctx context.Context, jobID string) ([]*JobResult, error)
	// ListResultsOfJobs returns the results of several jobs by job id,
	// each job's in entry order; jobs without results are absent.
	ListResultsOfJobs(ctx context.Context, jobIDs []string) (map[string][]*JobResult, error)
	// ClaimJobs moves up to limit claimable jobs to JobRunning under owner's
	// lease until leaseUntil, and returns them. Claimable: pending, or
	// running with a lease expired at now. The jobs are shared fairly
	// (docs/operations.md#scaling): each goes to the account with the least running work
	// (jobs running under a live lease, whoever holds it) among those with
	// claimable jobs, ties to the account whose oldest claimable job is
	// oldest; within an account, expedited jobs first, then oldest. While
	// another account has claimable jobs, no account gets more than
	// accountMax jobs held by owner (0: no cap). Concurrent claimers (in any
	// process) never get the same job while its lease holds.
	ClaimJobs(ctx context.Context, owner string, now, leaseUntil time.Time, limit, accountMax int) ([]*Job, error)
	// RenewLease extends owner's lease. Codes: ABORTED when owner no longer
	// holds the job.
	RenewLease(ctx context.Context, id, owner string, until, now time.Time) error
	// ReleaseJob returns a running job held by owner to the queue (pending).
	// Codes: ABORTED when owner no longer holds it.
	ReleaseJob(ctx context.Context, id, owner string, now time.Time) error
	// ReleaseClaims returns to the queue those of claims that are still
	// running under the very claim that took them (owner, and the
	// Attempts and Yields the claim returned: every later claim changes
	// them), and returns their ids. It is what a worker does with the jobs
	// a task left held when it ended: a later claim of the same job, by a
	// worker of the same process (one owner), is left alone. Codes:
	// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
	ReleaseClaims(ctx context.Context, claims []*Job, now time.Time) ([]string, error)
	// YieldJob returns a running job held by owner to the queue (pending)
	// so that its worker can serve another account, storing the results and
	// hits of the items it finished, in one transaction. The claim is not
	// counted in Attempts: yielding is neither a retry nor a failure.
	// Codes: ABORTED when owner no longer holds it.
	YieldJob(ctx context.Context, id, owner string, now time.Time, results []*JobResult, hits []*LabelHit) error
	// SaveJobResults stores results and hits of a running job held by
	// owner, which goes on running: a job of large reports stores them as
	// it goes rather than holding them to its end. FinishJob counts them
	// with its own. Codes: ABORTED when owner no longer holds it (then
	// nothing is stored).
	SaveJobResults(ctx context.Context, id, owner string, results []*JobResult, hits []*LabelHit) error
	// ListJobResultsAfter returns up to limit results of a job with an
	// entry index past afterIndex, in entry order.
	ListJobResultsAfter(ctx context.Context, jobID string, afterIndex, limit int) ([]*JobResult, error)
	// JobProgress returns the results a job stored when it yielded (its
	// first items, in entry order) and the Seq its next label hit takes.
	JobProgress(ctx context.Context, id string) ([]*JobResult, int, error)
	// QueueLoad returns the accounts with jobs under a live lease or
	// claimable jobs, with their running work as a claim at now counts it;
	// owner's leases are counted apart.
	QueueLoad(ctx context.Context, owner string, now time.Time) ([]AccountLoad, error)
	// FinishJob moves a job held by owner to the terminal status to, with
	// jobErr (for JobFailed), and stores results and hits and queues the
	// jobs then, in one transaction. Codes: ABORTED when owner no longer
	// holds the job (then nothing is stored); INVALID_ARGUMENT when to is
	// not terminal.
	FinishJob(ctx context.Context, id, owner string, to JobStatus, now time.Time, jobErr *JobError, results []*JobResult, hits []*LabelHit, then ...*Job) error
	// ChargeQuota charges n evaluations of the job to its account's usage of
	// day, at most once per job, when the total stays within limit. It
	// returns false, charging nothing, when it would not. Codes: ABORTED
	// when owner no longer holds the job.
	ChargeQuota(ctx context.Context, id, owner, accountID, day string, n, limit int64) (bool, error)
	// CreateFinishedJob inserts j, already in its terminal status, with its
	// results and hits (and, when it completed, the jobs j.Then), in one
	// write: a synchronous job evaluated before it was stored (the fast
	// path). Codes: ALREADY_EXISTS, NOT_FOUND (unknown account).
	CreateFinishedJob(ctx context.Context, j *Job, results []*JobResult, hits []*LabelHit) error
	// ListLabelHits returns a job's hits with Seq > afterSeq, in Seq order,
	// optionally of one result only.
	ListLabelHits(ctx context.Context, jobID, jobResultID string, afterSeq, limit int) ([]*LabelHit, error)
}

// contentHash is sha256::<hex> of the content bytes.
func ContentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256::" + hex.EncodeToString(sum[:])
}

// Key is the canonical form of f that page tokens are bound to.
func (f JobFilter) Key() string {
	b, _ := json.Marshal(f)
	return string(b)
}
