package persistence

// The finished-job write path: a claimed job's terminal transition
// (FinishJob) and a job stored already finished (CreateFinishedJob), each
// with its results, label hits and completion webhook in one transaction.
// Apart from jobs.go because this is the hot write of every job; the
// PostgreSQL single-statement variant is in job_finish_postgres.go.

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
	var then rowsInsert
	if j.Status == domain.JobCompleted {
		if then, err = withJobRows(rowsInsert{table: "jobs", columns: jobInsertColumns}, j.Then); err != nil {
			return err
		}
	}
	counts := metricDeltas{}
	counts.addOutcome(metricJob{AccountID: j.AccountID, Type: string(j.Type), Status: string(j.Status),
		PolicyVersionID: j.PolicyVersionID, LabelVersionID: j.LabelVersionID, Created: j.Created}, results, hits)
	// A result that enters a review queue is routed in the write that
	// records it (review_routing.go): on PostgreSQL its items are rows of
	// the grouped statement, elsewhere the transaction inserts them.
	// The items are made here, in memory, from the cached routes.
	rj := domain.ReviewJob{ID: j.ID, AccountID: j.AccountID, PolicyID: j.PolicyID, LabelID: j.LabelID}
	review, err := s.db.reviewItemsOf(ctx, rj, j.Input, results)
	if err != nil {
		return TranslateError(err)
	}
	write := func(review rowsInsert) error {
		if s.db.Dialect == Postgres && j.Webhook == nil {
			// The jobs that follow the completion (shadow evaluations) and
			// the review items are rows of the same prepared statement.
			w := finishedWrite{job: job, results: resultRows, hits: hitRows, review: review, counts: counts}
			w.job.rows = append(slices.Clip(job.rows), then.rows...)
			return TranslateError(s.db.finishedJobs.write(ctx, w))
		}
		insertThen, err := s.thenInsert(ctx, then)
		if err != nil {
			return TranslateError(err)
		}
		s.db.warmWrites(ctx)
		return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
			if err := s.db.execEach(ctx, tx, []rowsInsert{job, resultRows, hitRows}); err != nil {
				return err
			}
			if err := counts.apply(ctx, s.db, tx); err != nil {
				return err
			}
			if err := insertThen(tx); err != nil {
				return err
			}
			if err := s.db.execRows(ctx, tx, review, reviewItemConflict); err != nil {
				return err
			}
			if j.Webhook == nil {
				return nil // nothing owed; spares the outbox's read of the row
			}
			return enqueueJobWebhook(ctx, tx, j.ID, j.Status, *j.Completed)
		})
	}
	err = write(review)
	if len(review.rows) > 0 && domain.ErrorCode(err) == domain.NotFound {
		// A queue of the cached routes was deleted since they were read
		// (by another replica, or by this process meanwhile): its items
		// failed their foreign key, and the job with them. Deleting a
		// queue must not fail live traffic, so the job is routed again
		// from the database's queues and written once more.
		s.db.review.invalidate(j.AccountID)
		if review, err = s.db.reviewItemsOf(ctx, rj, j.Input, results); err != nil {
			return TranslateError(err)
		}
		err = write(review)
	}
	err = describe(err, domain.AlreadyExists, "job %q already exists", j.ID)
	return describe(err, domain.NotFound, "account %q not found", j.AccountID)
}

// FinishJob moves a job owner holds to the terminal status to, stores its
// results and hits and queues the jobs then, all or nothing. Codes: ABORTED when owner no longer
// holds the job; INVALID_ARGUMENT when to is not terminal; UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) FinishJob(ctx context.Context, id, owner string, to domain.JobStatus, now time.Time, jobErr *domain.JobError, results []*domain.JobResult, hits []*domain.LabelHit, then ...*domain.Job) error {
	if !to.Terminal() {
		return domain.Errorf(domain.InvalidArgument, "job status %q is not terminal", to)
	}
	thenRows, err := withJobRows(rowsInsert{table: "jobs", columns: jobInsertColumns}, then)
	if err != nil {
		return err
	}
	insertThen, err := s.thenInsert(ctx, thenRows)
	if err != nil {
		return TranslateError(err)
	}
	s.db.warmWrites(ctx)
	now = StoredTime(now)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := finishHeldJob(ctx, tx, heldJob{id, owner}, to, jobErr, now); err != nil {
			return err
		}
		if to == domain.JobCompleted {
			j, err := finishingJobOf(ctx, tx, id)
			if err != nil {
				return err
			}
			var earlier storedCounts
			if j.storedBefore() {
				if earlier, err = storedOutcomeCounts(ctx, tx, id); err != nil {
					return err
				}
			}
			if err := s.db.insertOutcome(ctx, tx, id, results, hits); err != nil {
				return err
			}
			if err := countOutcome(ctx, s.db, tx, j.metricJob, results, hits, earlier); err != nil {
				return err
			}
		} else if err := s.db.insertOutcome(ctx, tx, id, results, hits); err != nil {
			return err
		}
		if err := insertThen(tx); err != nil {
			return err
		}
		return enqueueJobWebhook(ctx, tx, id, to, now)
	})
}

// heldJob is a running job and the worker its lease names.
type heldJob struct{ id, owner string }

// finishHeld moves the jobs their owners still hold to the terminal status
// to, with jobErr (nil for none), in one guarded UPDATE, and returns the ids
// it moved: a job another worker took over, or that is no longer running,
// is left as it is, so a racing transition is a no-op. Every terminal
// transition of a claimed job goes through here, so the lease rule is
// written once.
func finishHeld(ctx context.Context, tx *sqlx.Tx, jobs []heldJob, to domain.JobStatus, jobErr *domain.JobError, now time.Time) (map[string]bool, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	reason, msg := "", ""
	if jobErr != nil {
		reason, msg = string(jobErr.Reason), jobErr.Message
	}
	args := make([]any, 0, 5+3*len(jobs))
	args = append(args, string(to), reason, msg, now, now)
	var q strings.Builder
	q.WriteString(`UPDATE jobs
		SET status = ?, error_reason = ?, error_message = ?, completed = ?, updated = ?,
		    lease_owner = NULL, lease_expires_at = NULL
		WHERE status = 'running' AND id IN (?`)
	args = append(args, jobs[0].id)
	for _, j := range jobs[1:] {
		q.WriteString(", ?")
		args = append(args, j.id)
	}
	// The owner each job must still have, by id; the IN list above is what
	// finds the rows (and the partitions, on PostgreSQL).
	q.WriteString(") AND lease_owner = CASE id")
	for _, j := range jobs {
		q.WriteString(" WHEN ? THEN ?")
		args = append(args, j.id, j.owner)
	}
	q.WriteString(" END RETURNING id")
	rows, err := tx.QueryxContext(ctx, tx.Rebind(q.String()), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := make(map[string]bool, len(jobs))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		done[id] = true
	}
	return done, rows.Err()
}

// finishHeldJob is finishHeld of one job. Codes: ABORTED when its owner no
// longer holds it.
func finishHeldJob(ctx context.Context, tx *sqlx.Tx, j heldJob, to domain.JobStatus, jobErr *domain.JobError, now time.Time) error {
	done, err := finishHeld(ctx, tx, []heldJob{j}, to, jobErr, now)
	if err != nil {
		return err
	}
	if !done[j.id] {
		return domain.Errorf(domain.Aborted, "job %q is no longer held by this worker", j.id)
	}
	return nil
}

// countOutcome adds the results and hits of job j, as it completes, to its
// versions' metric counts: those it finishes with and those it stored
// before (earlier), as takeOutJobs reads them back.
func countOutcome(ctx context.Context, db *DB, tx *sqlx.Tx, j metricJob, results []*domain.JobResult, hits []*domain.LabelHit, earlier storedCounts) error {
	if len(results) == 0 && earlier.evaluations == 0 {
		return nil
	}
	counts := metricDeltas{}
	counts.addOutcome(j, results, hits)
	if earlier.evaluations > 0 {
		counts.add(j, "", metricCounts{evaluations: earlier.evaluations}, 1)
		for _, p := range earlier.positives {
			counts.add(j, p.Label, metricCounts{positives: p.N}, 1)
		}
	}
	return counts.apply(ctx, db, tx)
}

// storedCounts is what the results a running job stored before it
// finishes count: evaluations, and positives per label.
type storedCounts struct {
	evaluations int64
	positives   []struct {
		Label string `db:"label"`
		N     int64  `db:"n"`
	}
}

// storedOutcomeCounts reads what job id's stored results count (read only
// for a job that stored some before it finished: finishingJob).
func storedOutcomeCounts(ctx context.Context, tx *sqlx.Tx, id string) (storedCounts, error) {
	var c storedCounts
	if err := tx.GetContext(ctx, &c.evaluations, tx.Rebind(`SELECT COUNT(*) FROM job_results WHERE job_id = ?`), id); err != nil || c.evaluations == 0 {
		return c, err
	}
	err := tx.SelectContext(ctx, &c.positives, tx.Rebind(`SELECT label, COUNT(DISTINCT job_result_id) AS n
		FROM label_hits WHERE job_id = ? GROUP BY label`), id)
	return c, err
}

// thenInsert returns how to insert the jobs that follow a completion in
// its transaction: one row each, with a prepared statement (prepared here,
// before the transaction holds a connection). A statement of its own rather
// than more rows in the job's INSERT, which SQLite parses on every call:
// measured, a second row there cost the write of a synchronous job 60%
// more (BenchmarkCreateFinishedJobShadow).
func (s *Jobs) thenInsert(ctx context.Context, rows rowsInsert) (func(tx *sqlx.Tx) error, error) {
	if len(rows.rows) == 0 {
		return func(*sqlx.Tx) error { return nil }, nil
	}
	q, _ := rows.sql(0, 1)
	st, err := s.db.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	return func(tx *sqlx.Tx) error {
		txst := tx.StmtxContext(ctx, st)
		for _, r := range rows.rows {
			if _, err := txst.ExecContext(ctx, r...); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// withJobRows returns in with the rows of jobs added.
func withJobRows(in rowsInsert, jobs []*domain.Job) (rowsInsert, error) {
	for _, j := range jobs {
		r, err := jobInsert(j)
		if err != nil {
			return in, err
		}
		in.rows = append(in.rows, r.rows...)
	}
	return in, nil
}

// outcomeChunkBytes is about how much encoded report insertOutcome holds
// at once: results are encoded and inserted a few at a time, so that a job
// of large reports (hundreds of sections, each with its spans) does not
// hold all of them encoded, and their hits as bind arguments, beside the
// reports themselves.
const outcomeChunkBytes = 512 << 10

// insertOutcome writes the results and label hits of job id, in chunks of
// results of about outcomeChunkBytes of report with their hits, and routes
// the results into the review queues they match (review_routing.go).
func (db *DB) insertOutcome(ctx context.Context, tx *sqlx.Tx, id string, results []*domain.JobResult, hits []*domain.LabelHit) error {
	byResult, err := hitsByResult(results, hits)
	if err != nil {
		return err
	}
	resultRows := rowsInsert{table: "job_results", columns: resultInsertColumns}
	hitRows := rowsInsert{table: "label_hits", columns: hitInsertColumns}
	size := 0
	flush := func() error {
		err := db.execEach(ctx, tx, []rowsInsert{resultRows, hitRows})
		resultRows.rows, hitRows.rows, size = resultRows.rows[:0], hitRows.rows[:0], 0
		return err
	}
	for i, r := range results {
		row, err := resultInsertRow(id, r)
		if err != nil {
			return err
		}
		resultRows.rows = append(resultRows.rows, row)
		size += len(row[6].([]byte))
		for _, h := range byResult[i] {
			row, err := hitInsertRow(id, h)
			if err != nil {
				return err
			}
			hitRows.rows = append(hitRows.rows, row)
			size += len(row[len(row)-1].(string))
		}
		if size >= outcomeChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return db.routeOutcome(ctx, tx, domain.ReviewJob{ID: id}, nil, results)
}

// hitsByResult groups hits by the index of their result in results. A
// hit belongs to a result written with it. Checked here because
// PostgreSQL's partitioned history has no foreign key to say so (migration
// 00094). Codes: NOT_FOUND.
func hitsByResult(results []*domain.JobResult, hits []*domain.LabelHit) ([][]*domain.LabelHit, error) {
	index := make(map[string]int, len(results))
	for i, r := range results {
		index[r.ID] = i
	}
	out := make([][]*domain.LabelHit, len(results))
	for _, h := range hits {
		i, ok := index[h.JobResultID]
		if !ok {
			return nil, domain.Errorf(domain.NotFound, "job result %q not found", h.JobResultID)
		}
		out[i] = append(out[i], h)
	}
	return out, nil
}

var (
	resultInsertColumns = strings.Fields(`id job_id seq content_hash metadata report report_packed error_reason error_message created`)
	hitInsertColumns    = strings.Fields(`job_id job_result_id seq label modality score start_ms end_ms
		frame_start_ms frame_end_ms transcript_start_ms transcript_end_ms spans`)
)

// outcomeInserts are the INSERTs of the results and the label hits of job
// id (either may have no rows); result times are normalized in place.
func outcomeInserts(id string, results []*domain.JobResult, hits []*domain.LabelHit) (resultRows, hitRows rowsInsert, err error) {
	resultRows = rowsInsert{table: "job_results", columns: resultInsertColumns, rows: make([][]any, 0, len(results))}
	hitRows = rowsInsert{table: "label_hits", columns: hitInsertColumns, rows: make([][]any, 0, len(hits))}
	byResult, err := hitsByResult(results, hits)
	if err != nil {
		return resultRows, hitRows, err
	}
	for i, r := range results {
		row, err := resultInsertRow(id, r)
		if err != nil {
			return resultRows, hitRows, err
		}
		resultRows.rows = append(resultRows.rows, row)
		for _, h := range byResult[i] {
			row, err := hitInsertRow(id, h)
			if err != nil {
				return resultRows, hitRows, err
			}
			hitRows.rows = append(hitRows.rows, row)
		}
	}
	return resultRows, hitRows, nil
}

// resultInsertRow is the job_results row of r (its time normalized in
// place); its packed report, the seventh column, is a []byte (nil for none).
func resultInsertRow(id string, r *domain.JobResult) ([]any, error) {
	r.Created = StoredTime(r.Created)
	meta, err := marshalJSON(r.Metadata)
	if err != nil {
		return nil, err
	}
	var report []byte
	if r.Report != nil {
		if report, err = packJSON(r.Report); err != nil {
			return nil, err
		}
	}
	rr, rm := "", ""
	if r.Error != nil {
		rr, rm = string(r.Error.Reason), r.Error.Message
	}
	// The text column stays empty: the report is stored packed.
	return []any{r.ID, id, r.Index, r.ContentHash, meta, "", report, rr, rm, r.Created}, nil
}

// hitInsertRow is the label_hits row of h; its spans, the last column, are
// a string ("" for none).
func hitInsertRow(id string, h *domain.LabelHit) ([]any, error) {
	spans := ""
	if len(h.Spans) > 0 {
		var err error
		if spans, err = marshalJSON(h.Spans); err != nil {
			return nil, err
		}
	}
	return []any{id, h.JobResultID, h.Seq, h.Label, string(h.Modality), h.Score, h.StartMs, h.EndMs,
		h.FrameStartMs, h.FrameEndMs, h.TranscriptStartMs, h.TranscriptEndMs, spans}, nil
}

// enqueueJobWebhook writes the job's completion webhook, if it has one, into
// the outbox in the transaction of the terminal transition: the webhook is
// owed exactly when the outcome is stored. A canceled job reports
// job.failed (the only event types are job.completed and job.failed).
func enqueueJobWebhook(ctx context.Context, tx *sqlx.Tx, id string, to domain.JobStatus, now time.Time) error {
	var w struct {
		AccountID   string `db:"account_id"`
		URL         string `db:"webhook_url"`
		Headers     string `db:"webhook_headers"`
		TraceParent string `db:"trace_parent"`
		TraceState  string `db:"trace_state"`
	}
	// The trace context is read only with tracing on: off, the deliverer
	// would not use it, and the read is the one of before.
	q := `SELECT account_id, webhook_url, webhook_headers FROM jobs WHERE id = ?`
	if traces.Enabled() {
		q = `SELECT account_id, webhook_url, webhook_headers, trace_parent, trace_state FROM jobs WHERE id = ?`
	}
	if err := tx.GetContext(ctx, &w, tx.Rebind(q), id); err != nil {
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
	e := &domain.WebhookEvent{
		ID: "msg_" + domain.NewID(), AccountID: w.AccountID, URL: w.URL, Headers: headers,
		Type: typ, SubjectKind: "job", SubjectID: id, Created: now,
	}
	// The span of ctx, when there is one (EnqueueWebhookTx); else the
	// trace context the job was queued with: a job finished by a worker,
	// or after the synchronous path's grace, is recorded under a context
	// of its own, and its delivery still belongs to the request's trace.
	if parent, _ := traces.Context(ctx); parent == "" {
		e.TraceParent, e.TraceState = w.TraceParent, w.TraceState
	}
	return EnqueueWebhookTx(ctx, tx, e)
}
