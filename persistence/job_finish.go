package persistence

// The finished-job write path: a claimed job's terminal transition
// (FinishJob) and a job stored already finished (CreateFinishedJob), each
// with its results, label hits and completion webhook in one transaction.
// Apart from jobs.go because this is the hot write of every job; the
// PostgreSQL single-statement variant is in job_finish_postgres.go.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
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
	if s.db.Dialect == Postgres && j.Webhook == nil {
		// The jobs that follow the completion (shadow evaluations) are
		// rows of the same prepared statement.
		job.rows = append(job.rows, then.rows...)
		err = TranslateError(s.db.finishedJobs.write(ctx, finishedWrite{job: job, results: resultRows, hits: hitRows}))
	} else {
		insertThen, perr := s.thenInsert(ctx, then)
		if perr != nil {
			return TranslateError(perr)
		}
		err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
			if err := execInserts(ctx, tx, []rowsInsert{job, resultRows, hitRows}); err != nil {
				return err
			}
			if err := insertThen(tx); err != nil {
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
		if err := insertThen(tx); err != nil {
			return err
		}
		return enqueueJobWebhook(ctx, tx, id, to, now)
	})
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
		frame_start_ms frame_end_ms transcript_start_ms transcript_end_ms spans`)
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
		spans := ""
		if len(h.Spans) > 0 {
			if spans, err = marshalJSON(h.Spans); err != nil {
				return resultRows, hitRows, err
			}
		}
		hitRows.rows = append(hitRows.rows, []any{id, h.JobResultID, h.Seq, h.Label, string(h.Modality), h.Score, h.StartMs, h.EndMs,
			h.FrameStartMs, h.FrameEndMs, h.TranscriptStartMs, h.TranscriptEndMs, spans})
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
