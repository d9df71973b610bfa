package persistence

// Live metrics of label and policy versions (docs/api.md#extension-endpoints): counted from the
// jobs evaluated with a version, their label hits and their feedback, and
// for a policy version also from its shadow evaluations of live jobs.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// QualityMetrics implements domain.QualityMetricsStore.
type QualityMetrics struct {
	db *DB
	// q runs the queries: db, or in a test a wrapper that also explains
	// each one.
	q querier
}

// querier is what the metrics' reads need of a database.
type querier interface {
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	Rebind(query string) string
}

var _ domain.QualityMetricsStore = (*QualityMetrics)(nil)

// NewQualityMetrics returns the metrics store on db.
func NewQualityMetrics(db *DB) *QualityMetrics { return &QualityMetrics{db: db, q: db} }

// metricsJobs is the condition on jobs j of the query's version: the
// account's completed client jobs (not the internal ones: a dataset run's
// chunks carry the label version too) created in [since, until).
func metricsJobs(q domain.MetricsQuery) (string, []any) {
	where := []string{"j.account_id = ?", "j.status = 'completed'",
		"j.job_type IN ('" + string(domain.JobTypeStandard) + "', '" + string(domain.JobTypeBatch) + "')"}
	args := []any{q.AccountID}
	// The "<> ''" terms are implied by the equality but spelled out: they
	// are the predicates of the partial indexes of migration 00092, which a
	// planner uses only when the query states them.
	if q.LabelVersionID != "" {
		where = append(where, "j.label_version_id = ?", "j.label_version_id <> ''")
		args = append(args, q.LabelVersionID)
	} else {
		where = append(where, "j.policy_version_id = ?", "j.policy_version_id <> ''")
		args = append(args, q.PolicyVersionID)
	}
	return where2(where, args, "j.created", q)
}

// where2 appends the since/until bounds on col.
func where2(where []string, args []any, col string, q domain.MetricsQuery) (string, []any) {
	if q.Since != nil {
		where = append(where, col+" >= ?")
		args = append(args, StoredTime(*q.Since))
	}
	if q.Until != nil {
		where = append(where, col+" < ?")
		args = append(args, StoredTime(*q.Until))
	}
	return strings.Join(where, " AND "), args
}

// judged is the condition on feedback annotations f that the metrics count:
// a judgement of the whole content.
const judged = `f.modality = '' AND f.expected_outcome IN ('EVALUATION_RESULT_TRUE', 'EVALUATION_RESULT_FALSE')`

type metricRows struct {
	byLabel map[string]*domain.VersionMetric
	order   []string
}

func (m *metricRows) row(label string) *domain.VersionMetric {
	r, ok := m.byLabel[label]
	if !ok {
		r = &domain.VersionMetric{Label: label}
		m.byLabel[label] = r
		m.order = append(m.order, label)
	}
	return r
}

// addJudgements counts n annotations expecting expected whose result was
// actual ("EVALUATION_RESULT_TRUE"/"_FALSE", or OUTCOME_TRUE/_FALSE; other
// results are in Annotations only).
func (m *metricRows) addJudgements(label, expected, actual string, n int) {
	r := m.row(label)
	r.Annotations += n
	var act bool
	switch actual {
	case string(domain.EvaluationResultTrue), "OUTCOME_TRUE":
		act = true
	case string(domain.EvaluationResultFalse), "OUTCOME_FALSE":
	default:
		return
	}
	for range n {
		r.Add(expected == string(domain.EvaluationResultTrue), act)
	}
}

type labelCount struct {
	Label string `db:"label"`
	N     int    `db:"n"`
}

type judgementCount struct {
	Label    string `db:"label"`
	Expected string `db:"expected_outcome"`
	Actual   string `db:"actual"`
	N        int    `db:"n"`
}

// VersionMetrics returns the version's metrics by label (domain.
// QualityMetricsStore). Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *QualityMetrics) VersionMetrics(ctx context.Context, q domain.MetricsQuery) ([]*domain.VersionMetric, error) {
	return s.versionMetrics(ctx, q, s.addJobs)
}

// versionMetrics is VersionMetrics with the jobs' part counted by addJobs.
func (s *QualityMetrics) versionMetrics(ctx context.Context, q domain.MetricsQuery,
	addJobs func(context.Context, domain.MetricsQuery, *metricRows) (int, error)) ([]*domain.VersionMetric, error) {
	m := &metricRows{byLabel: map[string]*domain.VersionMetric{}}
	for _, l := range q.Labels {
		m.row(l)
	}
	evaluations, err := addJobs(ctx, q, m)
	if err != nil {
		return nil, err
	}
	if q.PolicyVersionID != "" {
		n, err := s.addShadow(ctx, q, m)
		if err != nil {
			return nil, err
		}
		evaluations += n
	}
	slices.Sort(m.order[len(q.Labels):])
	out := make([]*domain.VersionMetric, len(m.order))
	for i, l := range m.order {
		out[i] = m.byLabel[l]
		out[i].Evaluations = evaluations
	}
	return out, nil
}

// addJobs adds the version's completed client jobs created in [since,
// until) to m and returns their results: the whole UTC days of the window
// from the day counts, the whole hours at either end of those from the
// hour counts (a few rows a day or an hour), and what is left, less than
// an hour at either end, from the jobs themselves (through the version's
// index). A window of whole hours, or none, as the console asks by
// default, reads no job at all.
func (s *QualityMetrics) addJobs(ctx context.Context, q domain.MetricsQuery, m *metricRows) (int, error) {
	evaluations := 0
	for _, sp := range windowSpans(q.Since, q.Until) {
		var n int
		var err error
		if sp.counts == nil {
			part := q
			part.Since, part.Until = sp.from, sp.to
			n, err = s.scanJobs(ctx, part, m)
		} else {
			n, err = s.addCounts(ctx, q, *sp.counts, sp.from, sp.to, m)
		}
		if err != nil {
			return 0, err
		}
		evaluations += n
	}
	return evaluations, nil
}

// metricSpan is a part [from, to) of a metrics window (nil for an open
// end) and the count table it is read from; nil: from the jobs.
type metricSpan struct {
	counts   *countTable
	from, to *time.Time
}

// windowSpans splits [since, until) into its whole days, the whole hours
// around them and the rest.
func windowSpans(since, until *time.Time) []metricSpan {
	from, to := wholeSpans(since, until, utcDay, 24*time.Hour)
	if from != nil && to != nil && !from.Before(*to) {
		return hourSpans(*since, *until)
	}
	spans := []metricSpan{{counts: &dayCounts, from: from, to: to}}
	if since != nil && from.After(*since) {
		spans = append(spans, hourSpans(*since, *from)...)
	}
	if until != nil && to.Before(*until) {
		spans = append(spans, hourSpans(*to, *until)...)
	}
	return spans
}

// hourSpans splits [since, until) into its whole hours and the rest.
func hourSpans(since, until time.Time) []metricSpan {
	from, to := wholeSpans(&since, &until, utcHour, time.Hour)
	if !from.Before(*to) {
		return []metricSpan{{from: &since, to: &until}}
	}
	spans := []metricSpan{{counts: &hourCounts, from: from, to: to}}
	if from.After(since) {
		spans = append(spans, metricSpan{from: &since, to: from})
	}
	if to.Before(until) {
		spans = append(spans, metricSpan{from: to, to: &until})
	}
	return spans
}

// wholeSpans bounds the whole spans (days or hours, truncate and step) in
// [since, until): from the first span's start at or after since, to the
// last one at or before until (nil for an open end).
func wholeSpans(since, until *time.Time, truncate func(time.Time) time.Time, step time.Duration) (from, to *time.Time) {
	if since != nil {
		d := truncate(*since)
		if d.Before(since.UTC()) {
			d = d.Add(step)
		}
		from = &d
	}
	if until != nil {
		d := truncate(*until)
		to = &d
	}
	return from, to
}

// addCounts adds the counts of table of the version in [from, to) to m and
// returns their evaluations. A label whose counts are all back to zero
// (its feedback replaced, its jobs expired) is not listed, as the jobs
// would not list it.
func (s *QualityMetrics) addCounts(ctx context.Context, q domain.MetricsQuery, table countTable, from, to *time.Time, m *metricRows) (int, error) {
	query, args := metricCountsSQL(q, table, from, to)
	var rows []struct {
		Label          string `db:"label"`
		Evaluations    int    `db:"evaluations"`
		Positives      int    `db:"positives"`
		Annotations    int    `db:"annotations"`
		TruePositives  int    `db:"true_positives"`
		FalsePositives int    `db:"false_positives"`
		TrueNegatives  int    `db:"true_negatives"`
		FalseNegatives int    `db:"false_negatives"`
	}
	if err := s.q.SelectContext(ctx, &rows, s.q.Rebind(query), args...); err != nil {
		return 0, TranslateError(err)
	}
	evaluations := 0
	for _, c := range rows {
		if c.Label == "" {
			evaluations += c.Evaluations
			continue
		}
		if c.Positives == 0 && c.Annotations == 0 {
			continue
		}
		r := m.row(c.Label)
		r.Positives += c.Positives
		r.Annotations += c.Annotations
		r.TruePositives += c.TruePositives
		r.FalsePositives += c.FalsePositives
		r.TrueNegatives += c.TrueNegatives
		r.FalseNegatives += c.FalseNegatives
	}
	return evaluations, nil
}

// metricCountsSQL sums the counts of q's version in table in [from, to):
// a range of the primary key.
func metricCountsSQL(q domain.MetricsQuery, table countTable, from, to *time.Time) (string, []any) {
	version := q.PolicyVersionID
	if q.LabelVersionID != "" {
		version = q.LabelVersionID
	}
	where, args := "account_id = ? AND version_id = ?", []any{q.AccountID, version}
	if from != nil {
		where += " AND " + table.bucket + " >= ?"
		args = append(args, *from)
	}
	if to != nil {
		where += " AND " + table.bucket + " < ?"
		args = append(args, *to)
	}
	return `SELECT label, SUM(evaluations) AS evaluations, SUM(positives) AS positives,
		SUM(annotations) AS annotations, SUM(true_positives) AS true_positives,
		SUM(false_positives) AS false_positives, SUM(true_negatives) AS true_negatives,
		SUM(false_negatives) AS false_negatives
		FROM ` + table.name + ` WHERE ` + where + ` GROUP BY label`, args
}

// bounded adds to cond, a condition on jobs created in q's window, the
// bounds of that window on the job id columns cols, on PostgreSQL: the
// planner then reads the window's day partitions of each table only, not
// every day's (jobIDWindow).
func (s *QualityMetrics) bounded(cond string, args []any, q domain.MetricsQuery, cols ...string) (string, []any) {
	if s.db.Dialect != Postgres {
		return cond, args
	}
	for _, col := range cols {
		c, bounds := jobIDWindow(col, q.Since, q.Until)
		if c == "" {
			break
		}
		cond, args = cond+" AND "+c, append(slices.Clip(args), bounds...)
	}
	return cond, args
}

// scanJobs adds the version's completed client jobs created in [since,
// until) to m from the jobs, their results, hits and feedback, and returns
// their results.
func (s *QualityMetrics) scanJobs(ctx context.Context, q domain.MetricsQuery, m *metricRows) (int, error) {
	jobs, jobArgs := metricsJobs(q)
	cond, args := s.bounded(jobs, jobArgs, q, "j.id", "r.job_id")
	var evaluations int
	if err := s.q.GetContext(ctx, &evaluations, s.q.Rebind(`SELECT COUNT(*) FROM job_results r JOIN jobs j ON j.id = r.job_id WHERE `+cond), args...); err != nil {
		return 0, TranslateError(err)
	}
	cond, args = s.bounded(jobs, jobArgs, q, "j.id", "h.job_id")
	var positives []labelCount
	if err := s.q.SelectContext(ctx, &positives, s.q.Rebind(`SELECT h.label, COUNT(DISTINCT h.job_result_id) AS n
		FROM label_hits h JOIN jobs j ON j.id = h.job_id WHERE `+cond+` GROUP BY h.label`), args...); err != nil {
		return 0, TranslateError(err)
	}
	for _, p := range positives {
		m.row(p.Label).Positives += p.N
	}
	cond, args = s.bounded(jobs, jobArgs, q, "j.id", "f.job_id")
	var judgements []judgementCount
	if err := s.q.SelectContext(ctx, &judgements, s.q.Rebind(`SELECT f.label, f.expected_outcome, f.actual_outcome AS actual, COUNT(*) AS n
		FROM feedback_annotations f JOIN jobs j ON j.id = f.job_id
		WHERE `+cond+` AND f.account_id = ? AND `+judged+`
		GROUP BY f.label, f.expected_outcome, f.actual_outcome`), append(args, q.AccountID)...); err != nil {
		return 0, TranslateError(err)
	}
	for _, c := range judgements {
		m.addJudgements(c.Label, c.Expected, c.Actual, c.N)
	}
	return evaluations, nil
}

// addShadow adds the evaluations of a policy version as a shadow to m (the
// outcomes it gave live job results, judged by the feedback on those
// results) and returns how many results it evaluated. A label of the
// version without a stored outcome was FALSE (shadow_results keeps only
// TRUE and FAILED ones); feedback on labels the version lacks is left out.
func (s *QualityMetrics) addShadow(ctx context.Context, q domain.MetricsQuery, m *metricRows) (int, error) {
	shadow, shadowArgs := where2([]string{"e.account_id = ?", "e.shadow_version_id = ?"}, []any{q.AccountID, q.PolicyVersionID}, "e.job_created", q)
	cond, args := s.bounded(shadow, shadowArgs, q, "e.job_id")
	var evaluations int
	if err := s.q.GetContext(ctx, &evaluations, s.q.Rebind(`SELECT COUNT(*) FROM shadow_evaluations e WHERE `+cond), args...); err != nil {
		return 0, TranslateError(err)
	}
	if evaluations == 0 {
		// Nothing to join: the positives and judgements below are of
		// these evaluations. A version that never ran as a shadow (most
		// of them) costs this one probe of the version's index.
		return 0, nil
	}
	var positives []labelCount
	if err := s.q.SelectContext(ctx, &positives, s.q.Rebind(`SELECT r.label, COUNT(*) AS n
		FROM shadow_results r JOIN shadow_evaluations e ON e.shadow_version_id = r.shadow_version_id AND e.job_result_id = r.job_result_id
		WHERE `+cond+` AND r.shadow_outcome = 'OUTCOME_TRUE' GROUP BY r.label`), args...); err != nil {
		return 0, TranslateError(err)
	}
	for _, p := range positives {
		m.row(p.Label).Positives += p.N
	}
	if len(q.Labels) == 0 {
		return evaluations, nil
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(q.Labels)), ", ")
	jargs := append(args, q.AccountID)
	for _, l := range q.Labels {
		jargs = append(jargs, l)
	}
	var judgements []judgementCount
	if err := s.q.SelectContext(ctx, &judgements, s.q.Rebind(`
		SELECT f.label, f.expected_outcome, COALESCE(r.shadow_outcome, 'OUTCOME_FALSE') AS actual, COUNT(*) AS n
		FROM shadow_evaluations e
		JOIN feedback_annotations f ON f.job_id = e.job_id AND f.job_result_id = e.job_result_id
		LEFT JOIN shadow_results r ON r.shadow_version_id = e.shadow_version_id AND r.job_result_id = e.job_result_id AND r.label = f.label
		WHERE `+cond+` AND f.account_id = ? AND `+judged+` AND f.label IN (`+in+`)
		GROUP BY f.label, f.expected_outcome, COALESCE(r.shadow_outcome, 'OUTCOME_FALSE')`), jargs...); err != nil {
		return 0, TranslateError(err)
	}
	for _, c := range judgements {
		m.addJudgements(c.Label, c.Expected, c.Actual, c.N)
	}
	return evaluations, nil
}
