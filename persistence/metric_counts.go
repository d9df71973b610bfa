package persistence

// The counts behind the live metrics of versions (migrations 00111 and
// 00140): what a completed client job adds to its versions' day and hour,
// kept in step with the history by the transactions that write and expire
// it, so that a version's metrics read a few rows per day (and per hour at
// the ends of a window) instead of every job of it.

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// metricKey is one row of the hour counts (and part of one of the day
// counts): label "" holds the version's evaluations.
type metricKey struct {
	accountID, versionID string
	hour                 time.Time
	label                string
}

// metricCounts are the counters of a row (or the change to them).
type metricCounts struct {
	evaluations, positives, annotations int64
	truePositives, falsePositives       int64
	trueNegatives, falseNegatives       int64
}

func (c *metricCounts) add(d metricCounts, sign int64) {
	c.evaluations += sign * d.evaluations
	c.positives += sign * d.positives
	c.annotations += sign * d.annotations
	c.truePositives += sign * d.truePositives
	c.falsePositives += sign * d.falsePositives
	c.trueNegatives += sign * d.trueNegatives
	c.falseNegatives += sign * d.falseNegatives
}

// judgement is the change one feedback annotation makes to its label's
// counts: an annotation of the whole content expecting TRUE or FALSE
// counts, and in the confusion matrix when its result was TRUE or FALSE.
func judgement(modality, expected, actual string) (metricCounts, bool) {
	var c metricCounts
	if modality != "" || (expected != string(domain.EvaluationResultTrue) && expected != string(domain.EvaluationResultFalse)) {
		return c, false
	}
	c.annotations = 1
	exp := expected == string(domain.EvaluationResultTrue)
	switch actual {
	case string(domain.EvaluationResultTrue), "OUTCOME_TRUE":
		if exp {
			c.truePositives = 1
		} else {
			c.falsePositives = 1
		}
	case string(domain.EvaluationResultFalse), "OUTCOME_FALSE":
		if exp {
			c.falseNegatives = 1
		} else {
			c.trueNegatives = 1
		}
	}
	return c, true
}

// metricJob is what of a job decides where it counts.
type metricJob struct {
	AccountID       string    `db:"account_id"`
	Type            string    `db:"job_type"`
	Status          string    `db:"status"`
	PolicyVersionID string    `db:"policy_version_id"`
	LabelVersionID  string    `db:"label_version_id"`
	Created         time.Time `db:"created"`
}

// counted reports whether the job counts in live metrics: completed, and a
// client's (a dataset run's chunks carry a label version too).
func (j metricJob) counted() bool {
	return j.Status == string(domain.JobCompleted) &&
		(j.Type == string(domain.JobTypeStandard) || j.Type == string(domain.JobTypeBatch))
}

// metricDeltas accumulates changes to version_metric_counts.
type metricDeltas map[metricKey]*metricCounts

// add adds sign times c to label's row of each version of j's hour.
func (d metricDeltas) add(j metricJob, label string, c metricCounts, sign int64) {
	if !j.counted() {
		return
	}
	for _, v := range []string{j.PolicyVersionID, j.LabelVersionID} {
		if v == "" {
			continue
		}
		k := metricKey{accountID: j.AccountID, versionID: v, hour: utcHour(j.Created), label: label}
		row, ok := d[k]
		if !ok {
			row = &metricCounts{}
			d[k] = row
		}
		row.add(c, sign)
	}
}

// addOutcome adds what a job's results and hits count: one evaluation per
// result, and per label one positive per result with a hit of it.
func (d metricDeltas) addOutcome(j metricJob, results []*domain.JobResult, hits []*domain.LabelHit) {
	if !j.counted() || len(results) == 0 {
		return
	}
	d.add(j, "", metricCounts{evaluations: int64(len(results))}, 1)
	type resultLabel struct{ result, label string }
	seen := make(map[resultLabel]bool, len(hits))
	for _, h := range hits {
		k := resultLabel{h.JobResultID, h.Label}
		if !seen[k] {
			seen[k] = true
			d.add(j, h.Label, metricCounts{positives: 1}, 1)
		}
	}
}

// merge adds o into d.
func (d metricDeltas) merge(o metricDeltas) {
	for k, c := range o {
		row, ok := d[k]
		if !ok {
			row = &metricCounts{}
			d[k] = row
		}
		row.add(*c, 1)
	}
}

// countTable is a table of metric counts and the span of its rows.
type countTable struct {
	name, bucket string
	truncate     func(time.Time) time.Time
}

var (
	dayCounts   = countTable{name: "version_metric_counts", bucket: "day", truncate: utcDay}
	hourCounts  = countTable{name: "version_metric_hour_counts", bucket: "hour", truncate: utcHour}
	countTables = []countTable{dayCounts, hourCounts}
)

// columns are t's columns, in the order of rows' values.
func (t countTable) columns() []string {
	return strings.Fields(`account_id version_id ` + t.bucket + ` label shard evaluations positives annotations
		true_positives false_positives true_negatives false_negatives`)
}

// metricCountTypes are a count table's columns' PostgreSQL types, for the
// unnest statement of job_finish_postgres.go.
var metricCountTypes = strings.Fields(`text text timestamptz text int2 int8 int8 int8 int8 int8 int8 int8`)

// metricCountShards is how many rows a version's counts of a label, day
// or hour are spread over (migration 00175): every completed job of the
// version adds to them, and transactions adding to the same row wait for
// each other's commit. A writer adds all of its counts to one shard, so
// its rows are locked in key order as before; readers sum the shards.
const metricCountShards = 8

// metricCountShard picks the shard of a write.
func metricCountShard() int16 { return int16(rand.IntN(metricCountShards)) }

// upsert is what follows an INSERT of t's rows: each adds to the row of
// its key.
func (t countTable) upsert() string {
	set := make([]string, 0, 7)
	for _, c := range t.columns()[5:] {
		set = append(set, c+" = "+t.name+"."+c+" + excluded."+c)
	}
	return ` ON CONFLICT (account_id, version_id, ` + t.bucket + `, label, shard) DO UPDATE SET ` + strings.Join(set, ", ")
}

// rows returns d as rows of t of shard, in key order. One order for every writer:
// two transactions adding to the same rows lock them in the same order,
// so they wait for each other instead of deadlocking.
func (d metricDeltas) rows(t countTable, shard int16) rowsInsert {
	merged := make(map[metricKey]*metricCounts, len(d))
	for k, c := range d {
		k.hour = t.truncate(k.hour)
		row, ok := merged[k]
		if !ok {
			row = &metricCounts{}
			merged[k] = row
		}
		row.add(*c, 1)
	}
	keys := make([]metricKey, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b metricKey) int {
		return cmp.Or(strings.Compare(a.accountID, b.accountID), strings.Compare(a.versionID, b.versionID),
			a.hour.Compare(b.hour), strings.Compare(a.label, b.label))
	})
	in := rowsInsert{table: t.name, columns: t.columns(), rows: make([][]any, 0, len(keys))}
	for _, k := range keys {
		c := merged[k]
		in.rows = append(in.rows, []any{k.accountID, k.versionID, k.hour, k.label, shard, c.evaluations, c.positives,
			c.annotations, c.truePositives, c.falsePositives, c.trueNegatives, c.falseNegatives})
	}
	return in
}

// rowSQL is the upsert of one row of t.
func (t countTable) rowSQL() string {
	return rowsInsert{table: t.name, columns: t.columns()}.rowSQL() + t.upsert()
}

// apply adds d to the count tables in tx, in a shard of its own choosing.
func (d metricDeltas) apply(ctx context.Context, db *DB, tx *sqlx.Tx) error {
	return d.applyShard(ctx, db, tx, metricCountShard())
}

// applyShard adds d to shard of the count tables in tx.
func (d metricDeltas) applyShard(ctx context.Context, db *DB, tx *sqlx.Tx, shard int16) error {
	if len(d) == 0 {
		return nil
	}
	for _, t := range countTables {
		if err := db.execRows(ctx, tx, d.rows(t, shard), t.upsert()); err != nil {
			return err
		}
	}
	return nil
}

// finishingJob is what of a completing job decides where it counts, and
// whether it stored results before it finished: while running
// (SaveJobResults sets results_saved) or before it yielded.
type finishingJob struct {
	metricJob
	ResultsSaved bool `db:"results_saved"`
	Yields       int  `db:"yields"`
}

// storedBefore reports whether the job may have stored results before its
// completion, which it then counts too.
func (j finishingJob) storedBefore() bool { return j.ResultsSaved || j.Yields > 0 }

// finishingJobOf reads finishingJob of job id.
func finishingJobOf(ctx context.Context, tx *sqlx.Tx, id string) (finishingJob, error) {
	var j finishingJob
	err := tx.GetContext(ctx, &j, tx.Rebind(`SELECT account_id, job_type, status, policy_version_id, label_version_id, created,
		results_saved, yields FROM jobs WHERE id = ?`), id)
	return j, err
}

// takeOutJobs subtracts from version_metric_counts what the jobs ids count
// (before they are deleted): read back from their results, hits and
// feedback, as many rows as the jobs have.
func takeOutJobs(ctx context.Context, db *DB, tx *sqlx.Tx, ids []string) error {
	var jobs []struct {
		ID string `db:"id"`
		metricJob
	}
	if err := selectIn(ctx, tx, &jobs, `SELECT id, account_id, job_type, status, policy_version_id, label_version_id, created
		FROM jobs WHERE id IN (?)`, ids); err != nil {
		return err
	}
	byID := make(map[string]metricJob, len(jobs))
	for _, j := range jobs {
		if j.counted() {
			byID[j.ID] = j.metricJob
		}
	}
	if len(byID) == 0 {
		return nil
	}
	counted := make([]string, 0, len(byID))
	for id := range byID {
		counted = append(counted, id)
	}
	d := metricDeltas{}
	var results []struct {
		JobID string `db:"job_id"`
		N     int64  `db:"n"`
	}
	if err := selectIn(ctx, tx, &results, `SELECT job_id, COUNT(*) AS n FROM job_results WHERE job_id IN (?) GROUP BY job_id`, counted); err != nil {
		return err
	}
	for _, r := range results {
		d.add(byID[r.JobID], "", metricCounts{evaluations: r.N}, -1)
	}
	var positives []struct {
		JobID string `db:"job_id"`
		Label string `db:"label"`
		N     int64  `db:"n"`
	}
	if err := selectIn(ctx, tx, &positives, `SELECT job_id, label, COUNT(DISTINCT job_result_id) AS n
		FROM label_hits WHERE job_id IN (?) GROUP BY job_id, label`, counted); err != nil {
		return err
	}
	for _, p := range positives {
		d.add(byID[p.JobID], p.Label, metricCounts{positives: p.N}, -1)
	}
	var feedback []struct {
		JobID     string `db:"job_id"`
		AccountID string `db:"account_id"`
		Label     string `db:"label"`
		Modality  string `db:"modality"`
		Expected  string `db:"expected_outcome"`
		Actual    string `db:"actual_outcome"`
	}
	if err := selectIn(ctx, tx, &feedback, `SELECT job_id, account_id, label, modality, expected_outcome, actual_outcome
		FROM feedback_annotations WHERE job_id IN (?) AND modality = ''`, counted); err != nil {
		return err
	}
	for _, f := range feedback {
		if c, ok := judgement(f.Modality, f.Expected, f.Actual); ok && f.AccountID == byID[f.JobID].AccountID {
			d.add(byID[f.JobID], f.Label, c, -1)
		}
	}
	return d.apply(ctx, db, tx)
}

// utcHour is the start of t's UTC hour.
func utcHour(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// selectIn runs query with its one IN (?) expanded to args into dest.
func selectIn(ctx context.Context, tx *sqlx.Tx, dest any, query string, args []string) error {
	q, qargs, err := sqlx.In(query, args)
	if err != nil {
		return err
	}
	return tx.SelectContext(ctx, dest, tx.Rebind(q), qargs...)
}
