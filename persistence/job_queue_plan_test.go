package persistence_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestJobs_QueuePlansProbeOnStaleStatistics: a burst of jobs arrives after
// PostgreSQL last analysed the jobs table (here: empty). The claim's read
// and each account's claim must still be index probes; a bitmap scan reads
// the whole queue on every claim (1.5 ms at 2,000 jobs, growing with the
// backlog), which is what the planner picks on such statistics unless told.
func TestJobs_QueuePlansProbeOnStaleStatistics(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		if db.Dialect != persistence.Postgres {
			t.Skip("a PostgreSQL planner question; SQLite plans these statements without statistics")
		}
		ctx := t.Context()
		_, err := db.ExecContext(ctx, `ANALYZE jobs`)
		require.NoError(t, err)
		b := setupJobs(t, db)
		for i := range 2000 {
			created := t0.Add(time.Duration(i) * time.Millisecond)
			require.NoError(t, b.jobs.CreateJob(ctx, &domain.Job{
				ID: fmt.Sprintf("job-%05d", i), AccountID: b.account.ID, Type: domain.JobTypeStandard,
				Status: domain.JobPending, Threshold: 0.5, Expedited: i%10 == 0, Created: created, Updated: created,
			}))
		}
		read, claim, err := b.jobs.ExplainQueue(ctx, "w", b.account.ID, t0.Add(time.Hour), 8)
		require.NoError(t, err)
		for name, plan := range map[string]string{"read": read, "claim": claim} {
			// The rows are in the default partition (their ids are not
			// UUIDv7); the empty day partitions cost nothing to scan. A
			// Sort node, not the Sort Key of a Merge Append of partitions.
			for _, avoid := range []string{"Bitmap", "Seq Scan on jobs ", "Seq Scan on jobs_pdefault", "Sort  ("} {
				require.False(t, strings.Contains(plan, avoid), "%s plan has a %s:\n%s", name, avoid, plan)
			}
		}
	})
}

// TestJobs_QueuePlansProbeAtDepth: on fresh statistics of a deep queue
// (one account's backlog of 20,000 jobs beside another's 10, after 20,000
// finished jobs of the same account), every statement of a claim and the
// queue-load read of a running job are index probes of the queue's
// partial indexes: no sequential scan (the depth count read the backlog
// that way: 47 ms per claim at 100,000 queued jobs), no bitmap or sort of
// the queue, and no walk of jobs_account_created_idx, which holds every
// finished job.
func TestJobs_QueuePlansProbeAtDepth(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		if db.Dialect != persistence.Postgres {
			t.Skip("a PostgreSQL planner question; SQLite plans these statements without statistics")
		}
		ctx := t.Context()
		fillQueue(t, db, "backlog", 20_000, t0.Add(time.Hour))
		insertJobs(t, db, "backlog", "completed", 20_000, t0)
		fillQueue(t, db, "small", 10, t0.Add(2*time.Hour))
		_, err := db.ExecContext(ctx, `ANALYZE jobs`)
		require.NoError(t, err)
		store := persistence.NewJobs(db)
		now := t0.Add(3 * time.Hour)
		// A few running jobs, so that the running counts read something.
		_, err = store.ClaimJobs(ctx, "w", now, now.Add(time.Minute), 4, 2)
		require.NoError(t, err)
		for _, account := range []string{"backlog", "small"} {
			read, claim, err := store.ExplainQueue(ctx, "w", account, now, 8)
			require.NoError(t, err)
			load, err := store.ExplainQueueLoad(ctx, "w", now)
			require.NoError(t, err)
			for name, plan := range map[string]string{"read": read, "claim": claim, "load": load} {
				avoid := []string{"Seq Scan", "Bitmap", "jobs_account_created_idx"}
				if name == "read" {
					// The claim sorts the ids it picked, the load read its
					// rows per account: a few rows, not the queue.
					avoid = append(avoid, "Sort  (") // a Sort node; Merge Append's "Sort Key" merges presorted partitions
				}
				// A sequential scan of an empty day partition (today's, made
				// ahead) costs nothing; only scans with rows are a finding.
				plan := emptyPartitionScan.ReplaceAllString(plan, "")
				for _, a := range avoid {
					require.False(t, strings.Contains(plan, a), "%s plan (%s) has a %s:\n%s", name, account, a, plan)
				}
			}
		}
	})
}

// emptyPartitionScan matches the plan line of a sequential scan the
// planner prices at nothing: a partition with no rows.
var emptyPartitionScan = regexp.MustCompile(`Seq Scan on jobs_p\w+ \w+\s+\(cost=0\.00\.\.0\.00 [^)]*\)`)
