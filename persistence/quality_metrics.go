package persistence

// Live metrics of label and policy versions (DESIGN §12): counted from the
// jobs evaluated with a version, their label hits and their feedback, and
// for a policy version also from its shadow evaluations of live jobs.

import (
	"context"
	"slices"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// QualityMetrics implements domain.QualityMetricsStore.
type QualityMetrics struct {
	db *DB
}

var _ domain.QualityMetricsStore = (*QualityMetrics)(nil)

// NewQualityMetrics returns the metrics store on db.
func NewQualityMetrics(db *DB) *QualityMetrics { return &QualityMetrics{db: db} }

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
	m := &metricRows{byLabel: map[string]*domain.VersionMetric{}}
	for _, l := range q.Labels {
		m.row(l)
	}
	cond, args := metricsJobs(q)
	var evaluations int
	if err := s.db.GetContext(ctx, &evaluations, s.db.Rebind(`SELECT COUNT(*) FROM job_results r JOIN jobs j ON j.id = r.job_id WHERE `+cond), args...); err != nil {
		return nil, TranslateError(err)
	}
	var positives []labelCount
	if err := s.db.SelectContext(ctx, &positives, s.db.Rebind(`SELECT h.label, COUNT(DISTINCT h.job_result_id) AS n
		FROM label_hits h JOIN jobs j ON j.id = h.job_id WHERE `+cond+` GROUP BY h.label`), args...); err != nil {
		return nil, TranslateError(err)
	}
	for _, p := range positives {
		m.row(p.Label).Positives += p.N
	}
	var judgements []judgementCount
	if err := s.db.SelectContext(ctx, &judgements, s.db.Rebind(`SELECT f.label, f.expected_outcome, f.actual_outcome AS actual, COUNT(*) AS n
		FROM feedback_annotations f JOIN jobs j ON j.id = f.job_id
		WHERE `+cond+` AND f.account_id = ? AND `+judged+`
		GROUP BY f.label, f.expected_outcome, f.actual_outcome`), append(args, q.AccountID)...); err != nil {
		return nil, TranslateError(err)
	}
	for _, c := range judgements {
		m.addJudgements(c.Label, c.Expected, c.Actual, c.N)
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

// addShadow adds the evaluations of a policy version as a shadow to m (the
// outcomes it gave live job results, judged by the feedback on those
// results) and returns how many results it evaluated. A label of the
// version without a stored outcome was FALSE (shadow_results keeps only
// TRUE and FAILED ones); feedback on labels the version lacks is left out.
func (s *QualityMetrics) addShadow(ctx context.Context, q domain.MetricsQuery, m *metricRows) (int, error) {
	cond, args := where2([]string{"e.account_id = ?", "e.shadow_version_id = ?"}, []any{q.AccountID, q.PolicyVersionID}, "e.job_created", q)
	var evaluations int
	if err := s.db.GetContext(ctx, &evaluations, s.db.Rebind(`SELECT COUNT(*) FROM shadow_evaluations e WHERE `+cond), args...); err != nil {
		return 0, TranslateError(err)
	}
	var positives []labelCount
	if err := s.db.SelectContext(ctx, &positives, s.db.Rebind(`SELECT r.label, COUNT(*) AS n
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
	if err := s.db.SelectContext(ctx, &judgements, s.db.Rebind(`
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
