package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// planCost is what a request's queries read, summed over them, from
// PostgreSQL's EXPLAIN (ANALYZE, BUFFERS): measures that do not depend on
// the machine's load, unlike latency.
type planCost struct {
	queries int
	// buffers are the shared buffers the executor touched (hit + read);
	// planning the planner's own (catalog and statistics).
	buffers, planning int
	// rows are the rows the scans examined: returned and filtered out,
	// times their loops.
	rows int
	// relations are the tables and partitions scanned (with repeats).
	relations int
}

func (c planCost) String() string {
	return fmt.Sprintf("%d queries, %d buffers (+%d planning), %d rows examined, %d relation scans",
		c.queries, c.buffers, c.planning, c.rows, c.relations)
}

// add adds the cost of one EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) output.
func (c *planCost) add(out string) error {
	var plans []struct {
		Plan     map[string]any `json:"Plan"`
		Planning map[string]any `json:"Planning"`
	}
	if err := json.Unmarshal([]byte(out), &plans); err != nil {
		return err
	}
	num := func(m map[string]any, k string) int {
		f, _ := m[k].(float64)
		return int(f)
	}
	for _, p := range plans {
		c.queries++
		c.buffers += num(p.Plan, "Shared Hit Blocks") + num(p.Plan, "Shared Read Blocks")
		c.planning += num(p.Planning, "Shared Hit Blocks") + num(p.Planning, "Shared Read Blocks")
		var walk func(n map[string]any)
		walk = func(n map[string]any) {
			if _, ok := n["Relation Name"]; ok {
				c.relations++
				c.rows += (num(n, "Actual Rows") + num(n, "Rows Removed by Filter") + num(n, "Rows Removed by Index Recheck")) * max(num(n, "Actual Loops"), 1)
			}
			children, _ := n["Plans"].([]any)
			for _, ch := range children {
				if m, ok := ch.(map[string]any); ok {
					walk(m)
				}
			}
		}
		walk(p.Plan)
	}
	return nil
}

// explainingQuerier runs every query twice: explained, its cost added to
// cost, and then for its result.
type explainingQuerier struct {
	db   *DB
	cost *planCost
	// plans, when set, receives each query's plan.
	plans *[]string
}

func (e explainingQuerier) explain(ctx context.Context, query string, args []any) error {
	var out string
	if err := e.db.GetContext(ctx, &out, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...); err != nil {
		return err
	}
	if e.plans != nil {
		var text []string
		if err := e.db.SelectContext(ctx, &text, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+query, args...); err != nil {
			return err
		}
		*e.plans = append(*e.plans, query+"\n"+strings.Join(text, "\n"))
	}
	return e.cost.add(out)
}

func (e explainingQuerier) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	if err := e.explain(ctx, query, args); err != nil {
		return err
	}
	return e.db.SelectContext(ctx, dest, query, args...)
}

func (e explainingQuerier) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	if err := e.explain(ctx, query, args); err != nil {
		return err
	}
	return e.db.GetContext(ctx, dest, query, args...)
}

func (e explainingQuerier) Rebind(query string) string { return e.db.Rebind(query) }

// TestHistoryExplain prints what each request of the history benchmark
// reads on the PostgreSQL databases that `go run ./bench/cmd/history -keep`
// built and kept: CONTENTEVAL_HISTORY_EXPLAIN is a space-separated list of
// name|url|accountID|policyVersionID, one per database (empty, full). A
// measurement, not a check: skipped without the variable.
func TestHistoryExplain(t *testing.T) {
	spec := os.Getenv("CONTENTEVAL_HISTORY_EXPLAIN")
	if spec == "" {
		t.Skip("CONTENTEVAL_HISTORY_EXPLAIN is not set")
	}
	ctx := context.Background()
	now := time.Now().UTC()
	const day = 24 * time.Hour
	weekAgo, monthAgo, monthAgoNext, dayAgo := now.Add(-7*day), now.Add(-30*day), now.Add(-29*day), now.Add(-day)
	status := func(s domain.JobStatus, from, to *time.Time) domain.JobFilter {
		f := domain.JobFilter{Status: s}
		if from != nil {
			f.Created = domain.TimeRange{Start: from, End: to}
		}
		return f
	}
	lists := []struct {
		name string
		f    domain.JobFilter
	}{
		{"jobs, status FAILED", status(domain.JobFailed, nil, nil)},
		{"jobs, status FAILED, last 7 days", status(domain.JobFailed, &weekAgo, &now)},
		{"jobs, status COMPLETED, 1 day 30 days ago", status(domain.JobCompleted, &monthAgo, &monthAgoNext)},
		{"jobs, status CANCELED", status(domain.JobCanceled, nil, nil)},
		{"jobs, status CANCELED, last day", status(domain.JobCanceled, &dayAgo, &now)},
	}
	for _, entry := range strings.Fields(spec) {
		parts := strings.Split(entry, "|")
		require.Len(t, parts, 4, "name|url|accountID|policyVersionID")
		db, err := Open(ctx, parts[1])
		require.NoError(t, err)
		defer db.Close()
		require.Equal(t, Postgres, db.Dialect, "buffers are PostgreSQL's")
		account, version := parts[2], parts[3]
		for _, l := range lists {
			cost := &planCost{}
			_, err := listJobRows(ctx, explainingQuerier{db: db, cost: cost}, db.Dialect, account, l.f, nil, 51)
			require.NoError(t, err)
			t.Logf("%s | %s | %s", parts[0], l.name, cost)
		}
		for _, m := range []struct {
			name  string
			since *time.Time
		}{{"version metrics, last day", &dayAgo}, {"version metrics, all time", nil}} {
			cost := &planCost{}
			var plans []string
			s := &QualityMetrics{db: db, q: explainingQuerier{db: db, cost: cost, plans: &plans}}
			_, err := s.VersionMetrics(ctx, domain.MetricsQuery{AccountID: account, PolicyVersionID: version, Since: m.since,
				Labels: []string{"label-00", "label-01"}})
			require.NoError(t, err)
			t.Logf("%s | %s | %s", parts[0], m.name, cost)
			if os.Getenv("CONTENTEVAL_HISTORY_EXPLAIN_PLANS") != "" {
				t.Logf("%s", strings.Join(plans, "\n\n"))
			}
		}
		cost, err := explainClaimAtDepth(ctx, db, account, 100_000, now)
		require.NoError(t, err)
		t.Logf("%s | claim of 8 at 100,000 queued (read + claim) | %s", parts[0], cost)
	}
}

// explainClaimAtDepth queues n jobs of account and explains a claim of 8
// as ClaimJobs plans it, all in a transaction it rolls back.
func explainClaimAtDepth(ctx context.Context, db *DB, account string, n int, now time.Time) (planCost, error) {
	cost := planCost{}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return cost, err
	}
	defer func() { _ = tx.Rollback() }()
	now = StoredTime(now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, account_id, job_type, status, threshold, created, updated)
		SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3) || '-' || substr(r, 7, 12),
			$1, 'JOB_TYPE_STANDARD', 'pending', 0.5, t, t
		FROM (SELECT lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') AS h, md5(g::text) AS r, t
			FROM (SELECT g, $2::timestamptz - g * interval '1 ms' AS t FROM generate_series(1, $3::int) g) s) s`, account, now, n); err != nil {
		return cost, err
	}
	var floor string
	if err := tx.GetContext(ctx, &floor, queuePlanningFloorSQL); err != nil {
		return cost, err
	}
	b := floorBound{Postgres, floor}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{queueSQL(Postgres, queuedAccountsSQL), queuedAccountsArgs(b, "w", now, 8)},
		{queueSQL(Postgres, pickAccountSQL), b.args(account, b.at(now), 8)},
		{claimOneSQL, []any{"w", now, now, now, "01900000-0000-7000-8000-000000000000", now}},
	} {
		var out string
		if err := tx.GetContext(ctx, &out, tx.Rebind("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+q.sql), q.args...); err != nil {
			return cost, err
		}
		if err := cost.add(out); err != nil {
			return cost, err
		}
		if os.Getenv("CONTENTEVAL_HISTORY_EXPLAIN_PLANS") != "" {
			var text []string
			if err := tx.SelectContext(ctx, &text, tx.Rebind("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q.sql), q.args...); err != nil {
				return cost, err
			}
			fmt.Println(q.sql + "\n" + strings.Join(text, "\n"))
		}
	}
	return cost, nil
}
