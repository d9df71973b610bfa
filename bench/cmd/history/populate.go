package main

// Building an N-job history in SQL, chunk by chunk, on either dialect: the
// jobs over the last `days` days (UUIDv7 ids of their creation time, so
// that PostgreSQL puts each in its day's partition), a result with a
// 20-section report per completed job, two label hits on a fifth of the
// results and a feedback annotation on about one in a hundred.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/persistence"
)

// historyChunk is the jobs written per statement.
const historyChunk = 50_000

// dialectSQL are the expressions that differ between the dialects. In all
// of them g is the job's number (1..N), its age grows with g.
type dialectSQL struct {
	// series is a FROM clause yielding g in [?, ?].
	series string
	// created is the creation time of job g of ? jobs over ? days, now ?.
	created string
	// uuid7 turns a creation time t and 32 random hex digits r into a UUIDv7.
	uuid7 func(t, r string) string
	// random is 32 random hex digits.
	random string
	// pos is the 0-based position of a hex digit c.
	pos func(c string) string
}

var postgresSQL = dialectSQL{
	series:  `generate_series(?::int, ?::int) g`,
	created: `(?::timestamptz - (?::float8 * g / ?::float8) * interval '1 day')`,
	uuid7: func(t, r string) string {
		h := `lpad(to_hex((extract(epoch FROM ` + t + `) * 1000)::bigint), 12, '0')`
		return `substr(` + h + `, 1, 8) || '-' || substr(` + h + `, 9, 4) || '-7' || substr(` + r + `, 1, 3) || '-8' || substr(` + r + `, 4, 3) || '-' || substr(` + r + `, 7, 12)`
	},
	random: `md5(random()::text)`,
	pos:    func(c string) string { return `(strpos('0123456789abcdef', ` + c + `) - 1)` },
}

var sqliteSQL = dialectSQL{
	series:  `(WITH RECURSIVE s(g) AS (SELECT ? UNION ALL SELECT g + 1 FROM s WHERE g < ?) SELECT g FROM s)`,
	created: `(? - CAST(? * 86400000000.0 * g / ? AS INTEGER))`,
	uuid7: func(t, r string) string {
		h := `printf('%012x', ` + t + ` / 1000)`
		return `substr(` + h + `, 1, 8) || '-' || substr(` + h + `, 9, 4) || '-7' || substr(` + r + `, 1, 3) || '-8' || substr(` + r + `, 4, 3) || '-' || substr(` + r + `, 7, 12)`
	},
	random: `lower(hex(randomblob(16)))`,
	pos:    func(c string) string { return `(instr('0123456789abcdef', ` + c + `) - 1)` },
}

// history is what a populated account's jobs are made of.
type history struct {
	accountID, policyID, policyKey, versionID string
	jobs, days                                int
}

// report is a 20-section report as the rules engine writes it, the size
// of a real one (about 4 KiB of JSON).
func report() string {
	type assertion struct {
		Signal  string `json:"signal"`
		Outcome string `json:"outcome"`
		Score   float64
	}
	type section struct {
		Label      string      `json:"label"`
		Outcome    string      `json:"outcome"`
		Score      float64     `json:"score"`
		Assertions []assertion `json:"assertions"`
	}
	var r struct {
		Result   string    `json:"result"`
		Sections []section `json:"sectionEvaluationReports"`
	}
	r.Result = "OUTCOME_FALSE"
	for i := range 20 {
		r.Sections = append(r.Sections, section{Label: fmt.Sprintf("label-%02d", i), Outcome: "OUTCOME_FALSE", Assertions: []assertion{
			{Signal: fmt.Sprintf(`=("forbidden phrase %d")`, i), Outcome: "OUTCOME_FALSE"},
			{Signal: fmt.Sprintf(`~("spamword%d")`, i), Outcome: "OUTCOME_FALSE"},
		}})
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// populate writes h's jobs into db, chunk by chunk.
func populate(ctx context.Context, db *persistence.DB, h history) error {
	d := sqliteSQL
	var now any = time.Now().UTC().UnixMicro()
	if db.Dialect == persistence.Postgres {
		d, now = postgresSQL, time.Now().UTC()
		if err := createDayPartitions(ctx, db, h.days+1); err != nil {
			return err
		}
	}
	rep := report()
	start := time.Now()
	for lo := 1; lo <= h.jobs; lo += historyChunk {
		hi := min(lo+historyChunk-1, h.jobs)
		if err := populateChunk(ctx, db, d, h, now, lo, hi, rep); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "history: %s %d/%d jobs (%.0f s)\n", db.Dialect, hi, h.jobs, time.Since(start).Seconds())
	}
	return nil
}

// populateChunk writes jobs lo..hi and their rows in one transaction.
func populateChunk(ctx context.Context, db *persistence.DB, d dialectSQL, h history, now any, lo, hi int, rep string) error {
	jobs := `INSERT INTO jobs (id, account_id, job_type, status, policy_id, policy_key, policy_version_id, threshold,
		contents, error_reason, error_message, created, updated, started, completed)
		SELECT ` + d.uuid7("t", "r") + `, ?, 'JOB_TYPE_STANDARD', status, ?, ?, ?, 0.5,
			'[{"contentHash":"sha256::' || r || '"}]',
			CASE WHEN status = 'failed' THEN 'JOB_ERROR_REASON_JOB_FAILED' ELSE '' END, '', t, t, t, t
		FROM (SELECT ` + d.created + ` AS t, ` + d.random + ` AS r,
			CASE WHEN g % 1000000 = 7 THEN 'canceled' WHEN g % 100 < 4 THEN 'failed' ELSE 'completed' END AS status
			FROM ` + d.series + `) s`
	// The last two hex digits of a job id pick its hits and feedback.
	pick := `(16 * ` + d.pos("substr(id, 35, 1)") + ` + ` + d.pos("substr(id, 36, 1)") + `)`
	results := `INSERT INTO job_results (id, job_id, seq, content_hash, report, created)
		SELECT id || '-r', id, 0, substr(contents, 18, 40), ?, created FROM jobs
		WHERE account_id = ? AND status = 'completed' AND created > ? AND created <= ?`
	hits := `INSERT INTO label_hits (job_id, job_result_id, seq, label, modality, score, start_ms)
		SELECT id, id || '-r', n, 'label-' || substr('0' || ((` + pick + ` + 7 * n) % 20), -2), 'MODALITY_TEXT', 0.9, 0
		FROM jobs, (SELECT 0 AS n UNION ALL SELECT 1) two
		WHERE account_id = ? AND status = 'completed' AND created > ? AND created <= ? AND ` + pick + ` < 51`
	feedback := `INSERT INTO feedback_annotations (id, account_id, job_id, job_result_id, target_key, content_hash, label,
		expected_outcome, actual_outcome, created, updated)
		SELECT id || '-f', account_id, id, id || '-r', substr(contents, 18, 40), substr(contents, 18, 40),
			'label-' || substr('0' || (` + pick + ` % 20), -2),
			CASE WHEN ` + pick + ` % 2 = 0 THEN 'EVALUATION_RESULT_TRUE' ELSE 'EVALUATION_RESULT_FALSE' END,
			'EVALUATION_RESULT_TRUE', created, created
		FROM jobs WHERE account_id = ? AND status = 'completed' AND created > ? AND created <= ? AND ` + pick + ` < 3`
	// The chunk's jobs are those created between the midpoints to the
	// neighbouring chunks' jobs.
	nowT := time.Now().UTC()
	if t, ok := now.(time.Time); ok {
		nowT = t
	} else {
		nowT = time.UnixMicro(now.(int64)).UTC()
	}
	at := func(g float64) time.Time {
		return nowT.Add(-time.Duration(float64(h.days) * g / float64(h.jobs) * float64(24*time.Hour)))
	}
	from, to := at(float64(hi)+0.5), at(float64(lo)-0.5)
	return db.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(jobs), h.accountID, h.policyID, h.policyKey, h.versionID, now, h.days, h.jobs, lo, hi); err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		for _, q := range []struct {
			name, sql string
			args      []any
		}{
			{"results", results, []any{rep, h.accountID, from, to}},
			{"hits", hits, []any{h.accountID, from, to}},
			{"feedback", feedback, []any{h.accountID, from, to}},
		} {
			if _, err := tx.ExecContext(ctx, tx.Rebind(q.sql), q.args...); err != nil {
				return fmt.Errorf("%s: %w", q.name, err)
			}
		}
		return nil
	})
}

// createDayPartitions makes PostgreSQL's day partitions of the last days
// (the server makes only today's and the next ones), named and bounded as
// migration 00094 and the retention sweep make them.
func createDayPartitions(ctx context.Context, db *persistence.DB, days int) error {
	tables := []string{"jobs", "job_results", "label_hits", "feedback_annotations", "shadow_evaluations", "shadow_results"}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for i := days; i >= 1; i-- {
		day := today.AddDate(0, 0, -i)
		for _, t := range tables {
			name := t + "_p" + day.Format("20060102")
			q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
				name, t, dayPrefix(day), dayPrefix(day.AddDate(0, 0, 1)))
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("partition %s: %w", name, err)
			}
		}
	}
	return nil
}

// dayPrefix is the first 13 characters of a UUIDv7 of day's first
// millisecond.
func dayPrefix(day time.Time) string {
	h := fmt.Sprintf("%012x", uint64(day.UnixMilli()))
	return h[:8] + "-" + h[8:]
}
