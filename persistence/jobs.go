package persistence

// Job rows: the Jobs store, the jobs table's rows and their mapping to
// domain.Job, and creating, reading and listing jobs. The rest of the store
// is split by concern: the queue (job_queue.go), the finished-job write path
// (job_finish.go, job_finish_postgres.go), outcome reads (job_results.go)
// and the daily quota (job_quota.go).

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/traces"
)

// Jobs implements domain.JobStore: the job records, their results and label
// hits, and the work queue.
//
// The queue is the jobs table. A claim moves pending jobs, and running jobs
// whose lease expired, to running under the claimer's lease, shared fairly
// across accounts (ClaimJobs). On PostgreSQL
// the candidates are selected FOR UPDATE SKIP LOCKED, so concurrent claimers
// (any number of processes) skip each other's rows instead of waiting or
// double-claiming; on SQLite the claim runs in a write transaction (BEGIN
// IMMEDIATE), which serializes claimers across processes. Every later
// transition is guarded by status = 'running' AND lease_owner = the holder,
// so the outcome of a worker that lost its lease is a no-op (ABORTED).
type Jobs struct {
	db *DB
}

var _ domain.JobStore = (*Jobs)(nil)

// NewJobs returns the job store on db.
func NewJobs(db *DB) *Jobs { return &Jobs{db: db} }

type jobRow struct {
	ID              string     `db:"id"`
	AccountID       string     `db:"account_id"`
	Type            string     `db:"job_type"`
	Status          string     `db:"status"`
	PolicyID        string     `db:"policy_id"`
	PolicyKey       string     `db:"policy_key"`
	PolicyVersionID string     `db:"policy_version_id"`
	LabelID         string     `db:"label_id"`
	LabelVersionID  string     `db:"label_version_id"`
	Threshold       float64    `db:"threshold"`
	Expedited       bool       `db:"expedited"`
	Options         string     `db:"options"`
	Input           string     `db:"input"`
	InputPacked     []byte     `db:"input_packed"`
	Contents        string     `db:"contents"`
	WebhookURL      string     `db:"webhook_url"`
	WebhookHeaders  string     `db:"webhook_headers"`
	ErrorReason     string     `db:"error_reason"`
	ErrorMessage    string     `db:"error_message"`
	LeaseOwner      *string    `db:"lease_owner"`
	LeaseExpiresAt  *time.Time `db:"lease_expires_at"`
	Attempts        int        `db:"attempts"`
	Yields          int        `db:"yields"`
	Created         time.Time  `db:"created"`
	Updated         time.Time  `db:"updated"`
	Started         *time.Time `db:"started"`
	Completed       *time.Time `db:"completed"`
	// Read by claims only, with tracing on (claimSQL): the worker
	// continues the trace of the request that queued the job.
	TraceParent string `db:"trace_parent"`
	TraceState  string `db:"trace_state"`
}

// jobColumns are the columns every read returns; the (large) input,
// jobInputColumns, is read only by claims, which need it, and by GetJob.
const jobColumns = `id, account_id, job_type, status, policy_id, policy_key, policy_version_id,
	label_id, label_version_id, threshold, expedited, options, contents, webhook_url,
	webhook_headers, error_reason, error_message, lease_owner, lease_expires_at, attempts, yields,
	created, updated, started, completed`

// jobInputColumns are the input's: packed, or JSON text in rows written
// before inputs were packed (packed.go).
const jobInputColumns = `input, input_packed`

func (r *jobRow) toDomain() (*domain.Job, error) {
	j := &domain.Job{
		ID: r.ID, AccountID: r.AccountID, Type: domain.JobType(r.Type), Status: domain.JobStatus(r.Status),
		PolicyID: r.PolicyID, PolicyKey: r.PolicyKey, PolicyVersionID: r.PolicyVersionID,
		LabelID: r.LabelID, LabelVersionID: r.LabelVersionID, Threshold: r.Threshold, Expedited: r.Expedited,
		LeaseExpiresAt: utcPtr(r.LeaseExpiresAt), Attempts: r.Attempts, Yields: r.Yields,
		Created: r.Created.UTC(), Updated: r.Updated.UTC(), Started: utcPtr(r.Started), Completed: utcPtr(r.Completed),
		TraceParent: r.TraceParent, TraceState: r.TraceState,
	}
	if r.LeaseOwner != nil {
		j.LeaseOwner = *r.LeaseOwner
	}
	if err := unmarshalJSON(r.Options, &j.Options); err != nil {
		return nil, err
	}
	if err := unmarshalJSON(r.Contents, &j.Contents); err != nil {
		return nil, err
	}
	if r.InputPacked != nil || r.Input != "" {
		if err := readJSONColumn(r.InputPacked, r.Input, &j.Input); err != nil {
			return nil, err
		}
	}
	if r.WebhookURL != "" {
		j.Webhook = &domain.Webhook{URL: r.WebhookURL}
		if err := unmarshalJSON(r.WebhookHeaders, &j.Webhook.ExtraHeaders); err != nil {
			return nil, err
		}
	}
	if r.ErrorReason != "" {
		j.Error = &domain.JobError{Reason: domain.JobErrorReason(r.ErrorReason), Message: r.ErrorMessage}
	}
	return j, nil
}

func unmarshalJSON(s string, v any) error {
	if s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

// marshalJSON encodes v for a text column. A job's input is as large as
// its request body (100 texts of 256 KiB): json.Marshal copies its grown
// buffer out and string() copies that again, two of the copies that put a
// full job over the memory bound of docs/api.md#limits. An Encoder writes its
// buffer into the Builder once, and String does not copy.
func marshalJSON(v any) (string, error) {
	var b strings.Builder
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func toJobs(rows []jobRow) ([]*domain.Job, error) {
	out := make([]*domain.Job, len(rows))
	for i := range rows {
		j, err := rows[i].toDomain()
		if err != nil {
			return nil, err
		}
		out[i] = j
	}
	return out, nil
}

// CreateJob inserts j as given; its times are normalized in place. A job
// a worker may claim (not finished) without a trace context gets ctx's,
// the one of the request that queues it; a given one is checked and
// bounded (traces.Stored). Codes: ALREADY_EXISTS; NOT_FOUND (unknown
// account); UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) CreateJob(ctx context.Context, j *domain.Job) error {
	if j.TraceParent != "" {
		j.TraceParent, j.TraceState = traces.Stored(j.TraceParent, j.TraceState)
	} else if !j.Status.Terminal() {
		j.TraceParent, j.TraceState = traces.Context(ctx)
	}
	if s.db.Dialect == Postgres && !j.Status.Terminal() {
		s.db.queueFloor.gate.RLock()
		defer s.db.queueFloor.gate.RUnlock()
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := insertJob(ctx, tx, j); err != nil {
			return err
		}
		return lowerQueueFloor(ctx, tx, s.db, j)
	})
	err = describe(err, domain.AlreadyExists, "job %q already exists", j.ID)
	return describe(err, domain.NotFound, "account %q not found", j.AccountID)
}

var jobInsertColumns = strings.Fields(`id account_id job_type status policy_id policy_key policy_version_id
	label_id label_version_id threshold expedited options input input_packed contents webhook_url
	webhook_headers error_reason error_message lease_owner lease_expires_at attempts
	created updated started completed`)

// insertJob writes j's row; its times are normalized in place. Its trace
// context goes in only when it has one: the rows written untraced, and the
// finished jobs of the synchronous path (jobInsert), keep the columns'
// empty defaults without binding them.
func insertJob(ctx context.Context, tx *sqlx.Tx, j *domain.Job) error {
	in, err := jobInsert(j)
	if err != nil {
		return err
	}
	if j.TraceParent != "" {
		in.columns = append(slices.Clip(in.columns), "trace_parent", "trace_state")
		in.rows[0] = append(in.rows[0], j.TraceParent, j.TraceState)
	}
	return execInserts(ctx, tx, []rowsInsert{in})
}

// jobInsert is the INSERT of j's row; its times are normalized in place.
func jobInsert(j *domain.Job) (rowsInsert, error) {
	j.Created, j.Updated = StoredTime(j.Created), StoredTime(j.Updated)
	j.Started, j.Completed, j.LeaseExpiresAt = storedTimePtr(j.Started), storedTimePtr(j.Completed), storedTimePtr(j.LeaseExpiresAt)
	in := rowsInsert{table: "jobs", columns: jobInsertColumns}
	options, err := marshalJSON(j.Options)
	if err != nil {
		return in, err
	}
	input, err := packJSON(j.Input)
	if err != nil {
		return in, err
	}
	contents, err := marshalJSON(j.Contents)
	if err != nil {
		return in, err
	}
	hookURL, hookHeaders := "", "{}"
	if j.Webhook != nil {
		hookURL = j.Webhook.URL
		if hookHeaders, err = marshalJSON(j.Webhook.ExtraHeaders); err != nil {
			return in, err
		}
	}
	var owner *string
	if j.LeaseOwner != "" {
		owner = &j.LeaseOwner
	}
	reason, msg := "", ""
	if j.Error != nil {
		reason, msg = string(j.Error.Reason), j.Error.Message
	}
	in.rows = [][]any{{
		j.ID, j.AccountID, string(j.Type), string(j.Status), j.PolicyID, j.PolicyKey, j.PolicyVersionID,
		j.LabelID, j.LabelVersionID, j.Threshold, j.Expedited, options, "", input, contents, hookURL,
		hookHeaders, reason, msg, owner, j.LeaseExpiresAt, j.Attempts,
		j.Created, j.Updated, j.Started, j.Completed,
	}}
	return in, nil
}

// GetJob returns a job of the account with its input. Codes: NOT_FOUND;
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) GetJob(ctx context.Context, accountID, id string) (*domain.Job, error) {
	var r jobRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+jobColumns+`, `+jobInputColumns+` FROM jobs WHERE id = ? AND account_id = ? AND `+internalJobTypesExcluded), id, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "job %q not found", id)
	}
	return r.toDomain()
}

// rangeSQL appends the conditions of one time range on col.
func rangeSQL(col string, r domain.TimeRange, where *[]string, args *[]any) {
	lo, hi := " > ?", " < ?"
	if r.Inclusive {
		lo, hi = " >= ?", " <= ?"
	}
	if r.Start != nil {
		*where = append(*where, col+lo)
		*args = append(*args, StoredTime(*r.Start))
	}
	if r.End != nil {
		*where = append(*where, col+hi)
		*args = append(*args, StoredTime(*r.End))
	}
}

// ListJobs returns up to limit jobs of the account matching f, newest first
// (created, id descending), without their input. A completed-time bound
// leaves out jobs that have not completed. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Jobs) ListJobs(ctx context.Context, accountID string, f domain.JobFilter, after *domain.JobCursor, limit int) ([]*domain.Job, error) {
	rows, err := listJobRows(ctx, s.db, s.db.Dialect, accountID, f, after, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	return toJobs(rows)
}
