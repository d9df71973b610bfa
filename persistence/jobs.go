package persistence

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
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
	Contents        string     `db:"contents"`
	WebhookURL      string     `db:"webhook_url"`
	WebhookHeaders  string     `db:"webhook_headers"`
	ErrorReason     string     `db:"error_reason"`
	ErrorMessage    string     `db:"error_message"`
	LeaseOwner      *string    `db:"lease_owner"`
	LeaseExpiresAt  *time.Time `db:"lease_expires_at"`
	Attempts        int        `db:"attempts"`
	Created         time.Time  `db:"created"`
	Updated         time.Time  `db:"updated"`
	Started         *time.Time `db:"started"`
	Completed       *time.Time `db:"completed"`
}

// jobColumns are the columns every read returns; the (large) input is read
// only by claims, which need it, and by GetJob.
const jobColumns = `id, account_id, job_type, status, policy_id, policy_key, policy_version_id,
	label_id, label_version_id, threshold, expedited, options, contents, webhook_url,
	webhook_headers, error_reason, error_message, lease_owner, lease_expires_at, attempts,
	created, updated, started, completed`

func (r *jobRow) toDomain() (*domain.Job, error) {
	j := &domain.Job{
		ID: r.ID, AccountID: r.AccountID, Type: domain.JobType(r.Type), Status: domain.JobStatus(r.Status),
		PolicyID: r.PolicyID, PolicyKey: r.PolicyKey, PolicyVersionID: r.PolicyVersionID,
		LabelID: r.LabelID, LabelVersionID: r.LabelVersionID, Threshold: r.Threshold, Expedited: r.Expedited,
		LeaseExpiresAt: utcPtr(r.LeaseExpiresAt), Attempts: r.Attempts,
		Created: r.Created.UTC(), Updated: r.Updated.UTC(), Started: utcPtr(r.Started), Completed: utcPtr(r.Completed),
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
	if r.Input != "" {
		if err := unmarshalJSON(r.Input, &j.Input); err != nil {
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
// full job over DESIGN §15's memory bound (issue 13). An Encoder writes its
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

// CreateJob inserts j as given; its times are normalized in place. Codes:
// ALREADY_EXISTS; NOT_FOUND (unknown account); UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Jobs) CreateJob(ctx context.Context, j *domain.Job) error {
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error { return insertJob(ctx, tx, j) })
	err = describe(err, domain.AlreadyExists, "job %q already exists", j.ID)
	return describe(err, domain.NotFound, "account %q not found", j.AccountID)
}

// CreateFinishedJob inserts j, already in its terminal status, with its
// results and hits (and its completion webhook into the outbox), atomically:
// the fast path of a synchronous job evaluated before it is stored. Codes:
// as CreateJob; INVALID_ARGUMENT when j is not terminal.
//
// On PostgreSQL, a job without a webhook is written by finishedJobsPostgres:
// one prepared statement, atomic on its own, one round trip; instead of
// BEGIN, three INSERTs and COMMIT (eight round trips with lib/pq, each
// INSERT parsed and planned again). Concurrent calls share that statement
// (DB.finishedJobs, a group commit): this is the write of every small
// synchronous job, so it bounds their rate and their tail latency.
func (s *Jobs) CreateFinishedJob(ctx context.Context, j *domain.Job, results []*domain.JobResult, hits []*domain.LabelHit) error {
	if !j.Status.Terminal() || j.Completed == nil {
		return domain.Errorf(domain.InvalidArgument, "job %q is not finished", j.ID)
	}
	job, err := jobInsert(j)
	if err != nil {
		return err
	}
	resultRows, hitRows, err := outcomeInserts(j.ID, results, hits)
	if err != nil {
		return err
	}
	if s.db.Dialect == Postgres && j.Webhook == nil {
		err = TranslateError(s.db.finishedJobs.write(ctx, finishedWrite{job: job, results: resultRows, hits: hitRows}))
	} else {
		err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
			if err := execInserts(ctx, tx, []rowsInsert{job, resultRows, hitRows}); err != nil {
				return err
			}
			if j.Webhook == nil {
				return nil // nothing owed; spares the outbox's read of the row
			}
			return enqueueJobWebhook(ctx, tx, j.ID, j.Status, *j.Completed)
		})
	}
	err = describe(err, domain.AlreadyExists, "job %q already exists", j.ID)
	return describe(err, domain.NotFound, "account %q not found", j.AccountID)
}

// finishedJobsPostgres records finished jobs, their results and their hits
// in one statement whose text does not depend on how many there are: one
// array argument per column (unnest turns them back into rows; empty arrays
// insert nothing). A fixed text is prepared once per connection, so
// PostgreSQL neither parses nor plans it again. The INSERTs are
// data-modifying CTEs: all of them run, and the foreign keys between them
// are checked at the end of the statement, when every row exists.
var finishedJobsPostgres = fmt.Sprintf("WITH j AS (%s), r AS (%s) %s",
	unnestInsert("jobs", jobInsertColumns, jobColumnTypes, 1),
	unnestInsert("job_results", resultInsertColumns, resultColumnTypes, len(jobInsertColumns)+1),
	unnestInsert("label_hits", hitInsertColumns, hitColumnTypes, len(jobInsertColumns)+len(resultInsertColumns)+1))

// unnestInsert is INSERT INTO table (columns) SELECT * FROM unnest($first::
// type[], ...): one array argument per column.
func unnestInsert(table string, columns, types []string, first int) string {
	arrays := make([]string, len(columns))
	for i := range columns {
		arrays[i] = "$" + strconv.Itoa(first+i) + "::" + types[i] + "[]"
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT * FROM unnest(%s)", table, strings.Join(columns, ", "), strings.Join(arrays, ", "))
}

// finishedWrite is one finished job's rows, a write of DB.finishedJobs.
type finishedWrite struct {
	job, results, hits rowsInsert
}

// Group commit of finished jobs. One statement in flight, and at least 2 ms
// between two statements' starts: under load the writes of 2 ms share one
// statement, commit and WAL flush, and a write after a quiet spell goes at
// once. When a whole group's worth waits behind the statement in flight (the
// database stalled on a WAL flush), a second statement starts, so that the
// backlog drains on both of PostgreSQL's cores. Measured on the jobs load
// test at half its peak rate (bench/results/jobs.md, run 6): 0.14-0.22 WAL
// flushes per job and the machine 56-65% busy, against 0.26-0.33 and 64-75%
// with two statements always allowed and 0.6-0.8 and 77-85% without the
// spacing. 64 jobs (each at most fastPathMaxText of text) bound a statement
// to a few MiB.
const (
	finishedJobSlots      = 1
	finishedJobBurstSlots = 2
	finishedJobMaxBatch   = 64
	finishedJobTimeout    = 30 * time.Second
	finishedJobSpacing    = 2 * time.Millisecond
)

func newFinishedJobsGroup(db *DB) *groupCommit[finishedWrite] {
	return &groupCommit[finishedWrite]{exec: db.insertFinishedJobs, slots: finishedJobSlots, burstSlots: finishedJobBurstSlots,
		maxBatch: finishedJobMaxBatch, timeout: finishedJobTimeout, spacing: finishedJobSpacing, sleep: time.Sleep}
}

// insertFinishedJobs writes ws with finishedJobsPostgres. Errors are the
// driver's, untranslated (the group commit tells server-side failures from
// the others).
func (db *DB) insertFinishedJobs(ctx context.Context, ws []finishedWrite) error {
	job, results, hits := ws[0].job, ws[0].results, ws[0].hits
	if len(ws) > 1 {
		job.rows, results.rows, hits.rows = nil, nil, nil
		for _, w := range ws {
			job.rows = append(job.rows, w.job.rows...)
			results.rows = append(results.rows, w.results.rows...)
			hits.rows = append(hits.rows, w.hits.rows...)
		}
	}
	args := job.columnArrays(jobColumnTypes, db.binaryParameters)
	args = append(args, results.columnArrays(resultColumnTypes, db.binaryParameters)...)
	args = append(args, hits.columnArrays(hitColumnTypes, db.binaryParameters)...)
	st, err := db.prepared(ctx, finishedJobsPostgres)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// postgresArrayTime is how a time travels inside an array argument: lib/pq
// would write it with a space, which array syntax would have to quote.
const postgresArrayTime = "2006-01-02T15:04:05.999999Z07:00"

// columnArrays returns one array argument per column of in's rows, whose
// PostgreSQL types are types: a binaryTextArray for text columns when the
// connection sends []byte arguments in binary (binary), else a textArray;
// a textArray for times; lib/pq's GenericArray for the others (numbers,
// NULLs).
func (in rowsInsert) columnArrays(types []string, binary bool) []any {
	out := make([]any, len(in.columns))
	for c := range in.columns {
		texts := make([]string, 0, len(in.rows))
		vals := make([]any, len(in.rows))
		for r, row := range in.rows {
			switch v := row[c].(type) {
			case string:
				texts = append(texts, v)
			case time.Time:
				texts = append(texts, v.UTC().Format(postgresArrayTime))
			default:
				vals[r] = v
			}
		}
		switch {
		case len(texts) < len(in.rows):
			out[c] = pq.GenericArray{A: vals}
		case types[c] == "text" && binary:
			out[c] = binaryTextArray(texts)
		default:
			out[c] = textArray(texts)
		}
	}
	return out
}

// binaryTextArray is a text[] argument in PostgreSQL's binary array format
// (array_recv): no quoting for the client to write nor escapes for the
// server to parse, which on a report's JSON was a tenth of PostgreSQL's CPU
// per job. Only for connections with binary_parameters, which send []byte
// arguments as binary.
type binaryTextArray []string

// textOID is the type OID of text, the element type of the array.
const textOID = 25

// Value renders the binary format: dimensions (1, or 0 when empty), no
// NULLs, the element type, the length and lower bound (1) of the dimension,
// then each element as a length and its bytes.
func (a binaryTextArray) Value() (driver.Value, error) {
	n := 20
	for _, s := range a {
		n += 4 + len(s)
	}
	b := make([]byte, 0, n)
	ndim := uint32(1)
	if len(a) == 0 {
		ndim = 0
	}
	b = binary.BigEndian.AppendUint32(b, ndim)
	b = binary.BigEndian.AppendUint32(b, 0) // no NULLs
	b = binary.BigEndian.AppendUint32(b, textOID)
	if ndim == 1 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(a)))
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	for _, s := range a {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// textArray is a text[] argument. lib/pq's arrays escape an element with
// one bytes.IndexAny call per quote, which on a result's report (JSON with
// hundreds of quotes) took a tenth of the server's CPU per synchronous job.
type textArray []string

// Value renders the array literal: every element quoted, with '"' and '\'
// escaped by a backslash (the only characters that need it there).
func (a textArray) Value() (driver.Value, error) {
	n := 2
	for _, s := range a {
		n += len(s) + 3
	}
	b := make([]byte, 0, n+n/8)
	b = append(b, '{')
	for i, s := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return string(append(b, '}')), nil
}

// rowsInsert is a multi-row INSERT not yet rendered: a table, its column
// list and the arguments of each row (all of len(columns)).
type rowsInsert struct {
	table   string
	columns []string
	rows    [][]any
}

// maxStatementArgs bounds the bind arguments of one statement: below both
// PostgreSQL's protocol limit (65,535) and SQLite's default (32,766).
const maxStatementArgs = 30000

// sql renders rows[from:to] of in with ? placeholders.
func (in rowsInsert) sql(from, to int) (string, []any) {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(in.table)
	b.WriteString(" (")
	b.WriteString(strings.Join(in.columns, ", "))
	b.WriteString(") VALUES ")
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(in.columns)), ", ") + ")"
	args := make([]any, 0, (to-from)*len(in.columns))
	for i := from; i < to; i++ {
		if i > from {
			b.WriteString(", ")
		}
		b.WriteString(row)
		args = append(args, in.rows[i]...)
	}
	return b.String(), args
}

// execInserts runs ins in order in tx (one without rows writes nothing),
// each in statements of at most maxStatementArgs arguments.
func execInserts(ctx context.Context, tx *sqlx.Tx, ins []rowsInsert) error {
	for _, in := range ins {
		per := max(1, maxStatementArgs/len(in.columns))
		for from := 0; from < len(in.rows); from += per {
			q, args := in.sql(from, min(from+per, len(in.rows)))
			if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
				return err
			}
		}
	}
	return nil
}

var jobInsertColumns = strings.Fields(`id account_id job_type status policy_id policy_key policy_version_id
	label_id label_version_id threshold expedited options input contents webhook_url
	webhook_headers error_reason error_message lease_owner lease_expires_at attempts
	created updated started completed`)

// insertJob writes j's row; its times are normalized in place.
func insertJob(ctx context.Context, tx *sqlx.Tx, j *domain.Job) error {
	in, err := jobInsert(j)
	if err != nil {
		return err
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
	input, err := marshalJSON(j.Input)
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
		j.LabelID, j.LabelVersionID, j.Threshold, j.Expedited, options, input, contents, hookURL,
		hookHeaders, reason, msg, owner, j.LeaseExpiresAt, j.Attempts,
		j.Created, j.Updated, j.Started, j.Completed,
	}}
	return in, nil
}

// GetJob returns a job of the account with its input. Codes: NOT_FOUND;
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) GetJob(ctx context.Context, accountID, id string) (*domain.Job, error) {
	var r jobRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+jobColumns+`, input FROM jobs WHERE id = ? AND account_id = ?`), id, accountID)
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
	where := []string{"account_id = ?"}
	args := []any{accountID}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.PolicyID != "" {
		where = append(where, "policy_id = ?")
		args = append(args, f.PolicyID)
	}
	rangeSQL("created", f.Created, &where, &args)
	rangeSQL("updated", f.Updated, &where, &args)
	rangeSQL("completed", f.Completed, &where, &args)
	if after != nil {
		c := StoredTime(after.Created)
		where = append(where, "(created < ? OR (created = ? AND id < ?))")
		args = append(args, c, c, after.ID)
	}
	args = append(args, limit)
	var rows []jobRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+jobColumns+` FROM jobs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY created DESC, id DESC LIMIT ?`), args...)
	if err != nil {
		return nil, TranslateError(err)
	}
	return toJobs(rows)
}

type jobResultRow struct {
	ID           string    `db:"id"`
	JobID        string    `db:"job_id"`
	Seq          int       `db:"seq"`
	ContentHash  string    `db:"content_hash"`
	Metadata     string    `db:"metadata"`
	Report       string    `db:"report"`
	ErrorReason  string    `db:"error_reason"`
	ErrorMessage string    `db:"error_message"`
	Created      time.Time `db:"created"`
}

// ListJobResults returns a job's results in entry order. Codes:
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ListJobResults(ctx context.Context, jobID string) ([]*domain.JobResult, error) {
	var rows []jobResultRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT id, job_id, seq, content_hash, metadata, report, error_reason, error_message, created
		FROM job_results WHERE job_id = ? ORDER BY seq`), jobID)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.JobResult, len(rows))
	for i, r := range rows {
		jr := &domain.JobResult{ID: r.ID, JobID: r.JobID, Index: r.Seq, ContentHash: r.ContentHash, Created: r.Created.UTC()}
		if err := unmarshalJSON(r.Metadata, &jr.Metadata); err != nil {
			return nil, err
		}
		if r.Report != "" {
			jr.Report = &rules.Report{}
			if err := json.Unmarshal([]byte(r.Report), jr.Report); err != nil {
				return nil, err
			}
		}
		if r.ErrorReason != "" {
			jr.Error = &domain.JobError{Reason: domain.JobErrorReason(r.ErrorReason), Message: r.ErrorMessage}
		}
		out[i] = jr
	}
	return out, nil
}

// FinishJob moves a job owner holds to the terminal status to and stores its
// results and hits, all or nothing. Codes: ABORTED when owner no longer
// holds the job; INVALID_ARGUMENT when to is not terminal; UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) FinishJob(ctx context.Context, id, owner string, to domain.JobStatus, now time.Time, jobErr *domain.JobError, results []*domain.JobResult, hits []*domain.LabelHit) error {
	if !to.Terminal() {
		return domain.Errorf(domain.InvalidArgument, "job status %q is not terminal", to)
	}
	now = StoredTime(now)
	reason, msg := "", ""
	if jobErr != nil {
		reason, msg = string(jobErr.Reason), jobErr.Message
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := guarded(ctx, tx, id, `
			UPDATE jobs
			SET status = ?, error_reason = ?, error_message = ?, completed = ?, updated = ?,
			    lease_owner = NULL, lease_expires_at = NULL
			WHERE id = ? AND status = 'running' AND lease_owner = ?`,
			string(to), reason, msg, now, now, id, owner); err != nil {
			return err
		}
		if err := insertOutcome(ctx, tx, id, results, hits); err != nil {
			return err
		}
		return enqueueJobWebhook(ctx, tx, id, to, now)
	})
}

// insertOutcome writes the results and label hits of job id.
func insertOutcome(ctx context.Context, tx *sqlx.Tx, id string, results []*domain.JobResult, hits []*domain.LabelHit) error {
	resultRows, hitRows, err := outcomeInserts(id, results, hits)
	if err != nil {
		return err
	}
	return execInserts(ctx, tx, []rowsInsert{resultRows, hitRows})
}

var (
	resultInsertColumns = strings.Fields(`id job_id seq content_hash metadata report error_reason error_message created`)
	hitInsertColumns    = strings.Fields(`job_id job_result_id seq label modality score start_ms end_ms
		frame_start_ms frame_end_ms transcript_start_ms transcript_end_ms`)
	// labelHitColumns is the select list of labelHitRow.
	labelHitColumns = strings.Join(hitInsertColumns, ", ")
	// The PostgreSQL types of the columns, for finishedJobsPostgres.
	jobColumnTypes = strings.Fields(`text text text text text text text
		text text float8 boolean text text text text
		text text text text timestamptz integer
		timestamptz timestamptz timestamptz timestamptz`)
	resultColumnTypes = strings.Fields(`text text integer text text text text text timestamptz`)
	hitColumnTypes    = strings.Fields(`text text integer text text float8 bigint bigint bigint bigint bigint bigint`)
)

// outcomeInserts are the INSERTs of the results and the label hits of job
// id (either may have no rows); result times are normalized in place.
func outcomeInserts(id string, results []*domain.JobResult, hits []*domain.LabelHit) (resultRows, hitRows rowsInsert, err error) {
	resultRows = rowsInsert{table: "job_results", columns: resultInsertColumns, rows: make([][]any, 0, len(results))}
	for _, r := range results {
		r.Created = StoredTime(r.Created)
		meta, err := marshalJSON(r.Metadata)
		if err != nil {
			return resultRows, hitRows, err
		}
		report := ""
		if r.Report != nil {
			if report, err = marshalJSON(r.Report); err != nil {
				return resultRows, hitRows, err
			}
		}
		rr, rm := "", ""
		if r.Error != nil {
			rr, rm = string(r.Error.Reason), r.Error.Message
		}
		resultRows.rows = append(resultRows.rows, []any{r.ID, id, r.Index, r.ContentHash, meta, report, rr, rm, r.Created})
	}
	hitRows = rowsInsert{table: "label_hits", columns: hitInsertColumns, rows: make([][]any, 0, len(hits))}
	for _, h := range hits {
		hitRows.rows = append(hitRows.rows, []any{id, h.JobResultID, h.Seq, h.Label, string(h.Modality), h.Score, h.StartMs, h.EndMs,
			h.FrameStartMs, h.FrameEndMs, h.TranscriptStartMs, h.TranscriptEndMs})
	}
	return resultRows, hitRows, nil
}

// enqueueJobWebhook writes the job's completion webhook, if it has one, into
// the outbox in the transaction of the terminal transition: the webhook is
// owed exactly when the outcome is stored. A canceled job reports
// job.failed (DESIGN §6 names only completed and failed).
func enqueueJobWebhook(ctx context.Context, tx *sqlx.Tx, id string, to domain.JobStatus, now time.Time) error {
	var w struct {
		AccountID string `db:"account_id"`
		URL       string `db:"webhook_url"`
		Headers   string `db:"webhook_headers"`
	}
	if err := tx.GetContext(ctx, &w, tx.Rebind(`SELECT account_id, webhook_url, webhook_headers FROM jobs WHERE id = ?`), id); err != nil {
		return TranslateError(err)
	}
	if w.URL == "" {
		return nil
	}
	var headers map[string]string
	if err := json.Unmarshal([]byte(w.Headers), &headers); err != nil {
		return err
	}
	typ := "job.failed"
	if to == domain.JobCompleted {
		typ = "job.completed"
	}
	return EnqueueWebhookTx(ctx, tx, &domain.WebhookEvent{
		ID: "msg_" + domain.NewID(), AccountID: w.AccountID, URL: w.URL, Headers: headers,
		Type: typ, SubjectKind: "job", SubjectID: id, Created: now,
	})
}

// ChargeQuota charges n evaluations of job id to accountID's usage of day,
// once per job (the job's quota_charged flag, set under the owner guard),
// unless the day's total would exceed limit. Codes: ABORTED when owner no
// longer holds the job; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ChargeQuota(ctx context.Context, id, owner, accountID, day string, n, limit int64) (bool, error) {
	ok := false
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var charged bool
		if err := tx.GetContext(ctx, &charged, tx.Rebind(`
			SELECT quota_charged FROM jobs WHERE id = ? AND status = 'running' AND lease_owner = ?`+s.db.forUpdate()), id, owner); err != nil {
			if ErrorCodeIsNotFound(err) {
				return domain.Errorf(domain.Aborted, "job %q is no longer held by this worker", id)
			}
			return err
		}
		if charged {
			ok = true
			return nil
		}
		if n > limit {
			return nil
		}
		var used []int64
		if err := tx.SelectContext(ctx, &used, tx.Rebind(`
			INSERT INTO evaluation_usage (account_id, day, used) VALUES (?, ?, ?)
			ON CONFLICT (account_id, day) DO UPDATE SET used = evaluation_usage.used + excluded.used
			WHERE evaluation_usage.used + excluded.used <= ?
			RETURNING used`), accountID, day, n, limit); err != nil {
			return err
		}
		if len(used) == 0 {
			return nil
		}
		ok = true
		_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE jobs SET quota_charged = ? WHERE id = ?`), true, id)
		return err
	})
	if err != nil {
		return false, err
	}
	return ok, nil
}

// ErrorCodeIsNotFound reports whether err is sql.ErrNoRows or translates to
// NOT_FOUND.
func ErrorCodeIsNotFound(err error) bool {
	return domain.ErrorCode(TranslateError(err)) == domain.NotFound
}

type labelHitRow struct {
	JobID             string  `db:"job_id"`
	JobResultID       string  `db:"job_result_id"`
	Seq               int     `db:"seq"`
	Label             string  `db:"label"`
	Modality          string  `db:"modality"`
	Score             float64 `db:"score"`
	StartMs           int64   `db:"start_ms"`
	EndMs             *int64  `db:"end_ms"`
	FrameStartMs      *int64  `db:"frame_start_ms"`
	FrameEndMs        *int64  `db:"frame_end_ms"`
	TranscriptStartMs *int64  `db:"transcript_start_ms"`
	TranscriptEndMs   *int64  `db:"transcript_end_ms"`
}

// ListLabelHits returns up to limit hits of a job after afterSeq, in seq
// order, of one result when jobResultID is set. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ListLabelHits(ctx context.Context, jobID, jobResultID string, afterSeq, limit int) ([]*domain.LabelHit, error) {
	q := `SELECT ` + labelHitColumns + ` FROM label_hits WHERE job_id = ? AND seq > ?`
	args := []any{jobID, afterSeq}
	if jobResultID != "" {
		q += ` AND job_result_id = ?`
		args = append(args, jobResultID)
	}
	q += ` ORDER BY seq LIMIT ?`
	args = append(args, limit)
	var rows []labelHitRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, TranslateError(err)
	}
	return toDomainHits(rows), nil
}
