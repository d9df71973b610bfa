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
			require.True(t, strings.Contains(plan, c.index), "the plan does not use %s:\n%s", c.index, plan)
		}
	})
}
