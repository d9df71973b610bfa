package persistence_test

import (
	"fmt"
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
			for _, avoid := range []string{"Bitmap", "Seq Scan on jobs", "Sort"} {
				require.False(t, strings.Contains(plan, avoid), "%s plan has a %s:\n%s", name, avoid, plan)
			}
		}
	})
}
