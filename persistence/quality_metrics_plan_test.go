package persistence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// A version's live metrics read the jobs of that version through its index
// (migration 00092), not every job of the account in the window.
func TestQualityMetrics_ReadTheVersionsJobsByIndex(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, c := range []struct {
			q     domain.MetricsQuery
			index string
		}{
			{domain.MetricsQuery{AccountID: "a", PolicyVersionID: "v"}, "jobs_policy_version_created_idx"},
			{domain.MetricsQuery{AccountID: "a", LabelVersionID: "v", Since: &since}, "jobs_label_version_created_idx"},
		} {
			plan, err := persistence.NewQualityMetrics(db).ExplainMetricsJobs(t.Context(), c.q)
			require.NoError(t, err)
			requireIndexedPlan(t, db, plan, c.index)
		}
	})
}

// The counts of a version, per day and per hour, are read as a range of
// their primary key, whatever the window: a few rows per day or hour of
// the version, nothing of the rest of the account's history.
func TestQualityMetrics_ReadTheVersionsCountsByKey(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC)
		for _, hourly := range []bool{false, true} {
			table := map[bool]string{false: "version_metric_counts", true: "version_metric_hour_counts"}[hourly]
			index := table + "_pkey"
			if db.Dialect == persistence.SQLite {
				index = "sqlite_autoindex_" + table + "_1"
			}
			for _, w := range [][2]*time.Time{{nil, nil}, {&from, nil}, {nil, &to}, {&from, &to}} {
				plan, err := persistence.NewQualityMetrics(db).ExplainMetricCounts(t.Context(),
					domain.MetricsQuery{AccountID: "a", PolicyVersionID: "v"}, hourly, w[0], w[1])
				require.NoError(t, err)
				// SQLite groups the version's rows (days or hours times
				// labels, the same with any history) by label in a
				// temporary B-tree.
				plan = strings.ReplaceAll(plan, "USE TEMP B-TREE FOR GROUP BY", "")
				requireIndexedPlan(t, db, plan, index)
			}
		}
	})
}
