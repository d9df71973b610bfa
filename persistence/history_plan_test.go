package persistence_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// requireIndexedPlan fails unless plan reads through index with no scan or
// sort of a whole table: on PostgreSQL no Seq Scan and no Sort node (a
// Merge Append of partitions, in index order, is fine); on SQLite a SEARCH
// of the index, no SCAN and no temporary B-tree (a sort).
func requireIndexedPlan(t *testing.T, db *persistence.DB, plan, index string) {
	t.Helper()
	var avoid []*regexp.Regexp
	if db.Dialect == persistence.Postgres {
		avoid = []*regexp.Regexp{regexp.MustCompile(`Seq Scan`), regexp.MustCompile(`Sort  \(`)}
	} else {
		avoid = []*regexp.Regexp{regexp.MustCompile(`\bSCAN\b`), regexp.MustCompile(`TEMP B-TREE`)}
	}
	for _, re := range avoid {
		require.False(t, re.MatchString(plan), "the plan has a %s:\n%s", re, plan)
	}
	for _, name := range indexAndPartitions(t, db, index) {
		if strings.Contains(plan, name+" ") || strings.Contains(plan, name+"\n") {
			return
		}
	}
	t.Fatalf("the plan does not use %s:\n%s", index, plan)
}

// indexAndPartitions is index and, on PostgreSQL, the indexes of its
// table's partitions, which a plan names instead of the parent's.
func indexAndPartitions(t *testing.T, db *persistence.DB, index string) []string {
	t.Helper()
	names := []string{index}
	if db.Dialect != persistence.Postgres {
		return names
	}
	var children []string
	require.NoError(t, db.SelectContext(t.Context(), &children, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1)`, index))
	return append(names, children...)
}

// Every filter of GET /v1/jobs reads through an index in page order: a
// status or policy with few matches would otherwise walk the account's
// whole history newest first.
func TestJobs_ListPlansUseAnIndexPerFilter(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		week := t0.Add(-7 * 24 * time.Hour)
		after := &domain.JobCursor{Created: t0, ID: "j"}
		for _, c := range []struct {
			name   string
			filter domain.JobFilter
			after  *domain.JobCursor
			index  string
		}{
			{"no filter", domain.JobFilter{}, nil, "jobs_account_created_idx"},
			{"no filter, next page", domain.JobFilter{}, after, "jobs_account_created_idx"},
			{"a window", domain.JobFilter{Created: domain.TimeRange{Start: &week, End: &t0}}, nil, "jobs_account_created_idx"},
			{"a status", domain.JobFilter{Status: domain.JobCanceled}, nil, "jobs_account_status_created_idx"},
			{"a status, next page", domain.JobFilter{Status: domain.JobFailed}, after, "jobs_account_status_created_idx"},
			{"a status in a window", domain.JobFilter{Status: domain.JobCompleted, Created: domain.TimeRange{Start: &week, End: &t0}}, nil, "jobs_account_status_created_idx"},
			{"a status, completed before", domain.JobFilter{Status: domain.JobFailed, Completed: domain.TimeRange{End: &week}}, nil, "jobs_account_status_created_idx"},
			{"a policy", domain.JobFilter{PolicyID: "p"}, nil, "jobs_account_policy_created_idx"},
			{"a policy, next page", domain.JobFilter{PolicyID: "p"}, after, "jobs_account_policy_created_idx"},
		} {
			t.Run(c.name, func(t *testing.T) {
				plan, err := persistence.NewJobs(db).ExplainListJobs(t.Context(), "a", c.filter, c.after, 50)
				require.NoError(t, err)
				requireIndexedPlan(t, db, plan, c.index)
			})
		}
	})
}

// partitionDay matches a day partition of a history table in a plan.
var partitionDay = regexp.MustCompile(`\b(jobs|job_results|label_hits|feedback_annotations|shadow_evaluations|shadow_results)_p(\d{8})\b`)

// idSlack is the time by which a stored job's id may differ from its
// creation: a window's id range is wider than the window by as much.
const idSlack = time.Hour

// requireDaysWithin fails unless every day partition plan reads is of a day
// in [from, to] (nil: open), give or take idSlack, and, when both ends are
// given, the plan reads no more days per table than the slackened window
// touches: which depends on the time of day the test runs (a day-long
// window that starts at 23:30 touches three days).
func requireDaysWithin(t *testing.T, plan string, from, to *time.Time) {
	t.Helper()
	most := 0
	if from != nil && to != nil {
		first := from.Add(-idSlack).Truncate(24 * time.Hour)
		last := to.Add(idSlack).Truncate(24 * time.Hour)
		most = int(last.Sub(first)/(24*time.Hour)) + 1
	}
	perTable := map[string]map[string]bool{}
	for _, m := range partitionDay.FindAllStringSubmatch(plan, -1) {
		day, err := time.Parse("20060102", m[2])
		require.NoError(t, err)
		if from != nil {
			require.False(t, day.Before(from.Add(-idSlack).Truncate(24*time.Hour)), "%s is before the window [%v, %v]:\n%s", m[0], from, to, plan)
		}
		if to != nil {
			require.False(t, day.After(to.Add(idSlack)), "%s is after the window [%v, %v]:\n%s", m[0], from, to, plan)
		}
		if perTable[m[1]] == nil {
			perTable[m[1]] = map[string]bool{}
		}
		perTable[m[1]][m[2]] = true
	}
	for table, days := range perTable {
		require.True(t, most == 0 || len(days) <= most, "%d days of %s read:\n%s", len(days), table, plan)
	}
}

// A window of creation times, and a next page's cursor, is a range of the
// job ids (a job's id is a UUIDv7 of its creation time): on PostgreSQL a
// list or a version's live metrics in a window read that window's day
// partitions, not every retained day's, so that their cost does not grow
// with the days of history kept. Both backends read through an index.
func TestHistory_WindowsReadTheirDaysOnly(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		const day = 24 * time.Hour
		now := time.Now().UTC()
		if db.Dialect == persistence.Postgres {
			_, err := persistence.NewRetention(db).EnsurePartitions(ctx, now.Add(-20*day), now)
			require.NoError(t, err)
		}
		at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
		for _, c := range []struct {
			name     string
			filter   domain.JobFilter
			after    *domain.JobCursor
			index    string
			from, to *time.Time
		}{
			{"a status, a day 15 days ago", domain.JobFilter{Status: domain.JobCompleted, Created: domain.TimeRange{Start: at(-15 * day), End: at(-14 * day)}},
				nil, "jobs_account_status_created_idx", at(-15 * day), at(-14 * day)},
			{"a status, the last 3 days", domain.JobFilter{Status: domain.JobFailed, Created: domain.TimeRange{Start: at(-3 * day), End: &now}},
				nil, "jobs_account_status_created_idx", at(-3 * day), &now},
			{"a status, a page after a job of 10 days ago", domain.JobFilter{Status: domain.JobCanceled}, &domain.JobCursor{Created: *at(-10 * day), ID: "x"},
				"jobs_account_status_created_idx", nil, at(-10 * day)},
			{"a window, updated before 12 days ago", domain.JobFilter{Updated: domain.TimeRange{End: at(-12 * day)}},
				nil, "jobs_account_created_idx", nil, at(-12 * day)},
			{"a window 5 days ago", domain.JobFilter{Created: domain.TimeRange{Start: at(-5 * day), End: at(-5*day + time.Hour)}},
				nil, "jobs_account_created_idx", at(-5 * day), at(-5*day + time.Hour)},
		} {
			t.Run(c.name, func(t *testing.T) {
				plan, err := persistence.NewJobs(db).ExplainListJobs(ctx, "a", c.filter, c.after, 50)
				require.NoError(t, err)
				requireIndexedPlan(t, db, plan, c.index)
				requireDaysWithin(t, plan, c.from, c.to)
			})
		}
		t.Run("a version's live metrics of the last day", func(t *testing.T) {
			since := now.Add(-day + 17*time.Minute)
			for _, q := range []domain.MetricsQuery{
				{AccountID: "a", PolicyVersionID: "v", Since: &since, Labels: []string{"l"}},
				{AccountID: "a", LabelVersionID: "v", Since: &since, Labels: []string{"l"}},
			} {
				plans, err := persistence.NewQualityMetrics(db).ExplainVersionMetrics(ctx, q)
				require.NoError(t, err)
				for _, plan := range plans {
					requireDaysWithin(t, plan, &since, at(2*day))
				}
			}
		})
	})
}
