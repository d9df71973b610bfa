package persistence

// Dataset runs (docs/api.md#extension-endpoints): the run rows, their snapshot of examples
// (items), the chunks queued as jobs, and the chunks' results, written in
// the transaction that finishes the chunk's job.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

type datasetRunRow struct {
	ID             string     `db:"id"`
	AccountID      string     `db:"account_id"`
	LabelID        string     `db:"label_id"`
	LabelVersionID string     `db:"label_version_id"`
	State          string     `db:"state"`
	Threshold      float64    `db:"threshold"`
	ExampleCount   int        `db:"example_count"`
	TruePositives  int        `db:"true_positives"`
	FalsePositives int        `db:"false_positives"`
	TrueNegatives  int        `db:"true_negatives"`
	FalseNegatives int        `db:"false_negatives"`
	Failed         int        `db:"failed"`
	Created        time.Time  `db:"created"`
	Updated        time.Time  `db:"updated"`
	Completed      *time.Time `db:"completed"`
}

const datasetRunColumns = `id, account_id, label_id, label_version_id, state, threshold, example_count,
	true_positives, false_positives, true_negatives, false_negatives, failed, created, updated, completed`

func (r *datasetRunRow) toDomain() *domain.DatasetRun {
	return &domain.DatasetRun{
		ID: r.ID, AccountID: r.AccountID, LabelID: r.LabelID, LabelVersionID: r.LabelVersionID,
		State: domain.DatasetRunState(r.State), Threshold: r.Threshold, ExampleCount: r.ExampleCount,
		Confusion: domain.Confusion{TruePositives: r.TruePositives, FalsePositives: r.FalsePositives,
			TrueNegatives: r.TrueNegatives, FalseNegatives: r.FalseNegatives},
		Failed: r.Failed, Created: r.Created.UTC(), Updated: r.Updated.UTC(), Completed: utcPtr(r.Completed),
	}
}

// CreateDatasetRun inserts the run, its snapshot of the label's examples
// and its chunk jobs in one transaction (domain.DatasetStore). Codes:
// NOT_FOUND (label), FAILED_PRECONDITION (too many active runs);
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) CreateDatasetRun(ctx context.Context, run *domain.DatasetRun, chunkSize, maxActive int, chunkJob func(from, to int) *domain.Job) error {
	if chunkSize <= 0 {
		return domain.Errorf(domain.InvalidArgument, "chunk size %d", chunkSize)
	}
	run.Created, run.Updated = StoredTime(run.Created), StoredTime(run.Updated)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := s.lockLabel(ctx, tx, run.AccountID, run.LabelID); err != nil {
			return err
		}
		var active int
		if err := tx.GetContext(ctx, &active, tx.Rebind(`SELECT COUNT(*) FROM dataset_runs
			WHERE label_id = ? AND state IN ('pending', 'running')`), run.LabelID); err != nil {
			return err
		}
		if active >= maxActive {
			return domain.Errorf(domain.FailedPrecondition, "the label has %d dataset runs pending or running; the limit is %d", active, maxActive)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO dataset_runs (id, account_id, label_id, label_version_id,
			state, threshold, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
			run.ID, run.AccountID, run.LabelID, run.LabelVersionID, string(domain.DatasetRunPending), run.Threshold, run.Created, run.Updated); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO dataset_run_items (run_id, seq, example_id, expected_outcome)
			SELECT ?, ROW_NUMBER() OVER (ORDER BY id) - 1, id, expected_outcome FROM dataset_examples WHERE label_id = ?`),
			run.ID, run.LabelID)
		if err != nil {
			return err
		}
		n64, err := res.RowsAffected()
		if err != nil {
			return err
		}
		n := int(n64)
		run.ExampleCount, run.State = n, domain.DatasetRunPending
		if n == 0 {
			run.State, run.Completed = domain.DatasetRunCompleted, &run.Created
			_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE dataset_runs SET state = ?, completed = ? WHERE id = ?`),
				string(domain.DatasetRunCompleted), run.Created, run.ID)
			return err
		}
		jobs := rowsInsert{table: "jobs", columns: jobInsertColumns}
		chunks := 0
		for from := 0; from < n; from += chunkSize {
			in, err := jobInsert(chunkJob(from, min(from+chunkSize, n)))
			if err != nil {
				return err
			}
			jobs.rows = append(jobs.rows, in.rows...)
			chunks++
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE dataset_runs SET example_count = ?, chunks_left = ? WHERE id = ?`),
			n, chunks, run.ID); err != nil {
			return err
		}
		return execInserts(ctx, tx, []rowsInsert{jobs})
	})
}

// GetDatasetRun returns a run of the account's label. Codes: NOT_FOUND;
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) GetDatasetRun(ctx context.Context, accountID, labelID, id string) (*domain.DatasetRun, error) {
	var r datasetRunRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+datasetRunColumns+` FROM dataset_runs
		WHERE id = ? AND label_id = ? AND account_id = ?`), id, labelID, accountID)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "dataset run %q not found", id)
	}
	return r.toDomain(), nil
}

// ListDatasetRuns returns up to limit runs of the account's label, newest
// first. Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) ListDatasetRuns(ctx context.Context, accountID, labelID string, after *domain.DatasetRunCursor, limit int) ([]*domain.DatasetRun, error) {
	q := `SELECT ` + datasetRunColumns + ` FROM dataset_runs WHERE label_id = ? AND account_id = ?`
	args := []any{labelID, accountID}
	if after != nil {
		c := StoredTime(after.Created)
		q += ` AND (created < ? OR (created = ? AND id < ?))`
		args = append(args, c, c, after.ID)
	}
	q += ` ORDER BY created DESC, id DESC LIMIT ?`
	var rows []datasetRunRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), append(args, limit)...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.DatasetRun, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// DatasetRunItems returns the items from `from` on, before `to`, of a run
// with their examples' content (none for examples deleted since), stopping
// early rather than read more than maxBytes of content (at least one item).
// Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) DatasetRunItems(ctx context.Context, runID string, from, to, maxBytes int) ([]*domain.DatasetRunItem, error) {
	var sizes []int64
	err := s.db.SelectContext(ctx, &sizes, s.db.Rebind(`SELECT COALESCE(`+exampleSize+`, 0)
		FROM dataset_run_items i LEFT JOIN dataset_examples e ON e.id = i.example_id
		WHERE i.run_id = ? AND i.seq >= ? AND i.seq < ? ORDER BY i.seq`), runID, from, to)
	if err != nil || len(sizes) == 0 {
		return nil, TranslateError(err)
	}
	to = from + withinBudget(sizes, len(sizes), maxBytes)
	var rows []struct {
		Seq       int            `db:"seq"`
		ExampleID string         `db:"item_example_id"`
		Expected  string         `db:"item_expected"`
		ID        sql.NullString `db:"id"`
		AccountID sql.NullString `db:"account_id"`
		LabelID   sql.NullString `db:"label_id"`
		Kind      sql.NullString `db:"kind"`
		Text      sql.NullString `db:"text"`
		Bytes     []byte         `db:"bytes"`
		Metadata  sql.NullString `db:"metadata"`
		Hash      sql.NullString `db:"content_hash"`
		ExpectedE sql.NullString `db:"expected_outcome"`
		Note      sql.NullString `db:"note"`
		Created   *time.Time     `db:"created"`
	}
	err = s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT i.seq, i.example_id AS item_example_id, i.expected_outcome AS item_expected,
		       e.id, e.account_id, e.label_id, e.kind, e.text, e.bytes, e.metadata, e.content_hash,
		       e.expected_outcome, e.note, e.created
		FROM dataset_run_items i LEFT JOIN dataset_examples e ON e.id = i.example_id
		WHERE i.run_id = ? AND i.seq >= ? AND i.seq < ? ORDER BY i.seq`), runID, from, to)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.DatasetRunItem, len(rows))
	for i, r := range rows {
		it := &domain.DatasetRunItem{Seq: r.Seq, ExampleID: r.ExampleID, Expected: domain.EvaluationResult(r.Expected)}
		if r.ID.Valid {
			er := exampleRow{ID: r.ID.String, AccountID: r.AccountID.String, LabelID: r.LabelID.String, Kind: r.Kind.String,
				Text: r.Text.String, Bytes: r.Bytes, Metadata: r.Metadata.String, ContentHash: r.Hash.String,
				Expected: r.ExpectedE.String, Note: r.Note.String}
			if r.Created != nil {
				er.Created = *r.Created
			}
			if it.Example, err = er.toDomain(); err != nil {
				return nil, err
			}
		}
		out[i] = it
	}
	return out, nil
}

var datasetResultColumns = strings.Fields(`run_id seq example_id expected_outcome outcome score report error`)

// chunkResults returns the rows of a chunk's results and their counts:
// the confusion of those evaluated, and how many failed.
func chunkResults(runID string, results []*domain.DatasetRunResult) (rowsInsert, domain.Confusion, int, error) {
	in := rowsInsert{table: "dataset_run_results", columns: datasetResultColumns, rows: make([][]any, 0, len(results))}
	var c domain.Confusion
	failed := 0
	for _, r := range results {
		report := ""
		if r.Report != nil {
			var err error
			if report, err = marshalJSON(r.Report); err != nil {
				return in, c, 0, err
			}
		}
		in.rows = append(in.rows, []any{runID, r.Seq, r.ExampleID, string(r.Expected), string(r.Outcome), r.Score, report, r.Error})
		switch r.Outcome {
		case rules.OutcomeTrue, rules.OutcomeFalse:
			c.Add(r.Expected == domain.EvaluationResultTrue, r.Outcome == rules.OutcomeTrue)
		default:
			failed++
		}
	}
	return in, c, failed, nil
}

// FinishDatasetRunChunk records a chunk's results and counts and finishes
// its job, guarded by the job's lease (domain.DatasetStore). The run row's
// UPDATE locks it (PostgreSQL) or runs under the write lock (SQLite), so
// concurrent chunks add up and exactly one of them sees the last chunk
// done. Codes: ABORTED; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) FinishDatasetRunChunk(ctx context.Context, jobID, owner, runID string, results []*domain.DatasetRunResult, gaveUp bool, now time.Time) error {
	now = StoredTime(now)
	in, c, failed, err := chunkResults(runID, results)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := finishHeldJob(ctx, tx, heldJob{jobID, owner}, domain.JobCompleted, nil, now); err != nil {
			return err
		}
		if err := execInserts(ctx, tx, []rowsInsert{in}); err != nil {
			return err
		}
		var left struct {
			ChunksLeft int  `db:"chunks_left"`
			GaveUp     bool `db:"gave_up"`
		}
		err := tx.GetContext(ctx, &left, tx.Rebind(`
			UPDATE dataset_runs SET
				true_positives = true_positives + ?, false_positives = false_positives + ?,
				true_negatives = true_negatives + ?, false_negatives = false_negatives + ?,
				failed = failed + ?, chunks_left = chunks_left - 1,
				gave_up = CASE WHEN ? THEN TRUE ELSE gave_up END, state = 'running', updated = ?
			WHERE id = ?
			RETURNING chunks_left, gave_up`),
			c.TruePositives, c.FalsePositives, c.TrueNegatives, c.FalseNegatives, failed, gaveUp, now, runID)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.NotFound, "dataset run %q not found", runID)
		}
		if err != nil || left.ChunksLeft > 0 {
			return err
		}
		state := domain.DatasetRunCompleted
		if left.GaveUp {
			state = domain.DatasetRunFailed
		}
		_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE dataset_runs SET state = ?, completed = ? WHERE id = ?`), string(state), now, runID)
		return err
	})
}

type datasetResultRow struct {
	Seq       int     `db:"seq"`
	ExampleID string  `db:"example_id"`
	Expected  string  `db:"expected_outcome"`
	Outcome   string  `db:"outcome"`
	Score     float64 `db:"score"`
	Report    string  `db:"report"`
	Error     string  `db:"error"`
}

// ListDatasetRunResults returns up to limit results of a run after
// afterSeq. Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) ListDatasetRunResults(ctx context.Context, runID string, afterSeq, limit int) ([]*domain.DatasetRunResult, error) {
	var rows []datasetResultRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT seq, example_id, expected_outcome, outcome, score, report, error
		FROM dataset_run_results WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`), runID, afterSeq, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.DatasetRunResult, len(rows))
	for i, r := range rows {
		out[i] = &domain.DatasetRunResult{Seq: r.Seq, ExampleID: r.ExampleID, Expected: domain.EvaluationResult(r.Expected),
			Outcome: rules.Outcome(r.Outcome), Score: r.Score, Error: r.Error}
		if r.Report != "" {
			out[i].Report = new(rules.Report)
			if err := unmarshalJSON(r.Report, out[i].Report); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// CompareDatasetRuns returns up to limit examples evaluated by both runs
// whose outcomes differ, after afterSeq (of run runID). Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) CompareDatasetRuns(ctx context.Context, runID, baseRunID string, afterSeq, limit int) ([]*domain.DatasetRunChange, error) {
	var rows []struct {
		Seq         int    `db:"seq"`
		ExampleID   string `db:"example_id"`
		Expected    string `db:"expected_outcome"`
		BaseOutcome string `db:"base_outcome"`
		Outcome     string `db:"outcome"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT a.seq, a.example_id, a.expected_outcome, b.outcome AS base_outcome, a.outcome
		FROM dataset_run_results a JOIN dataset_run_results b ON b.run_id = ? AND b.example_id = a.example_id
		WHERE a.run_id = ? AND a.seq > ? AND a.outcome <> b.outcome
		ORDER BY a.seq LIMIT ?`), baseRunID, runID, afterSeq, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.DatasetRunChange, len(rows))
	for i, r := range rows {
		out[i] = &domain.DatasetRunChange{Seq: r.Seq, ExampleID: r.ExampleID, Expected: domain.EvaluationResult(r.Expected),
			BaseOutcome: rules.Outcome(r.BaseOutcome), Outcome: rules.Outcome(r.Outcome)}
	}
	return out, nil
}
