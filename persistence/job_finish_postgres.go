package persistence

// CreateFinishedJob on PostgreSQL: finished jobs written by one prepared
// unnest statement, shared by concurrent callers through a group commit
// (group_commit.go). Apart from job_finish.go because only PostgreSQL takes
// this path and its tuning (slots, spacing, batch size) is measured on its own.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// finishedJobsPostgres records finished jobs, their results and their hits
// in one statement whose text does not depend on how many there are: one
// array argument per column (unnest turns them back into rows; empty arrays
// insert nothing). A fixed text is prepared once per connection, so
// PostgreSQL neither parses nor plans it again. The INSERTs are
// data-modifying CTEs: all of them run, and the foreign keys between them
// are checked at the end of the statement, when every row exists. Two
// of them add the jobs' results and hits to their versions' metric counts per
// day and per hour (metric_counts.go), in the same commit.
var finishedJobsPostgres = finishedJobsSQL(false)

// finishedJobsReviewPostgres is finishedJobsPostgres that also writes the
// review items of the results that enter review queues (review_routing.go),
// in the same statement: a group that holds no such result keeps the
// statement without them.
var finishedJobsReviewPostgres = finishedJobsSQL(true)

func finishedJobsSQL(review bool) string {
	n := len(jobInsertColumns) + len(resultInsertColumns) + len(hitInsertColumns) + 2*len(metricCountTypes)
	items := ""
	if review {
		items = ", ri AS (" + unnestInsert("review_items", reviewItemInsertColumns, reviewItemColumnTypes, n+1) + reviewItemConflict + ")"
	}
	// The primary statement runs before the data-modifying CTEs, so the day
	// counts are it: their rows are locked before the hour counts', as
	// every transaction adding to them does (metricDeltas.apply). In the
	// other order a worker finishing a job of the same version at the same
	// time deadlocks with this statement.
	return fmt.Sprintf("WITH j AS (%s), r AS (%s), h AS (%s), c AS (%s)%s %s",
		unnestInsert("jobs", jobInsertColumns, jobColumnTypes, 1),
		unnestInsert("job_results", resultInsertColumns, resultColumnTypes, len(jobInsertColumns)+1),
		unnestInsert("label_hits", hitInsertColumns, hitColumnTypes, len(jobInsertColumns)+len(resultInsertColumns)+1),
		unnestInsert(hourCounts.name, hourCounts.columns(), metricCountTypes,
			len(jobInsertColumns)+len(resultInsertColumns)+len(hitInsertColumns)+len(metricCountTypes)+1)+hourCounts.upsert(),
		items,
		unnestInsert(dayCounts.name, dayCounts.columns(), metricCountTypes,
			len(jobInsertColumns)+len(resultInsertColumns)+len(hitInsertColumns)+1)+dayCounts.upsert())
}

// The PostgreSQL types of the columns, for finishedJobsPostgres.
var (
	jobColumnTypes = strings.Fields(`text text text text text text text
		text text float8 boolean text text bytea text text
		text text text text timestamptz integer
		timestamptz timestamptz timestamptz timestamptz`)
	resultColumnTypes = strings.Fields(`text text integer text text text bytea text text timestamptz`)
	hitColumnTypes    = strings.Fields(`text text integer text text float8 bigint bigint bigint bigint bigint bigint text`)
)

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
	// review is the job's review items (review_items rows), if any.
	review rowsInsert
	// counts is what the job adds to its versions' metric counts.
	counts metricDeltas
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
	job, results, hits, counts, review := ws[0].job, ws[0].results, ws[0].hits, ws[0].counts, ws[0].review
	if len(ws) > 1 {
		job.rows, results.rows, hits.rows, review.rows = nil, nil, nil, nil
		// One row per key: an INSERT ... ON CONFLICT may not update a row
		// twice, and the group's jobs share their versions' days and hours.
		counts = metricDeltas{}
		for _, w := range ws {
			job.rows = append(job.rows, w.job.rows...)
			results.rows = append(results.rows, w.results.rows...)
			hits.rows = append(hits.rows, w.hits.rows...)
			review.rows = append(review.rows, w.review.rows...)
			counts.merge(w.counts)
		}
	}
	args := job.columnArrays(jobColumnTypes, db.binaryParameters)
	args = append(args, results.columnArrays(resultColumnTypes, db.binaryParameters)...)
	args = append(args, hits.columnArrays(hitColumnTypes, db.binaryParameters)...)
	shard := metricCountShard()
	for _, t := range countTables {
		args = append(args, counts.rows(t, shard).columnArrays(metricCountTypes, db.binaryParameters)...)
	}
	q := finishedJobsPostgres
	if len(review.rows) > 0 {
		review.columns = reviewItemInsertColumns
		args = append(args, review.columnArrays(reviewItemColumnTypes, db.binaryParameters)...)
		q = finishedJobsReviewPostgres
	}
	st, err := db.prepared(ctx, q)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}
