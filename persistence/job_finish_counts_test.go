package persistence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// A completed job counts in its version's live metrics every result it
// stored, however it stored them: at completion only, while running, in a
// claim it yielded, or all of these; a job that stored none before its
// completion has nothing read back.
func TestJobs_CompletionCountsResultsStoredBefore(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		b := setupJobs(t, db)
		metrics := persistence.NewQualityMetrics(db)
		for n, c := range []struct {
			name               string
			saved, yielded, at int // results stored while running, before yielding, at completion
		}{
			{"at completion only", 0, 0, 3},
			{"while running", 2, 0, 1},
			{"before a yield", 0, 2, 1},
			{"all three ways", 1, 1, 1},
			{"nothing at completion", 2, 0, 0},
			{"none at all", 0, 0, 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				id := fmt.Sprintf("j%d", n)
				version := fmt.Sprintf("v%d", n)
				created := t0.Add(time.Duration(n) * time.Minute)
				j := b.newJob(t, id, created, false)
				_, err := db.ExecContext(ctx, db.Rebind(`UPDATE jobs SET policy_version_id = ? WHERE id = ?`), version, j.ID)
				require.NoError(t, err)
				seq := 0
				batch := func(k int) ([]*domain.JobResult, []*domain.LabelHit) {
					var rs []*domain.JobResult
					var hs []*domain.LabelHit
					for range k {
						r := &domain.JobResult{ID: fmt.Sprintf("%s-r%d", id, seq), JobID: id, Index: seq, Created: created}
						rs = append(rs, r)
						hs = append(hs, &domain.LabelHit{JobID: id, JobResultID: r.ID, Seq: seq, Label: "A", Modality: domain.ModalityText, Score: 1})
						seq++
					}
					return rs, hs
				}
				at := created.Add(time.Second)
				claim := func(owner string) {
					got, err := b.jobs.ClaimJobs(ctx, owner, at, at.Add(time.Minute), 10, 0)
					require.NoError(t, err)
					require.Len(t, got, 1)
				}
				claim("w")
				if c.yielded > 0 {
					rs, hs := batch(c.yielded)
					require.NoError(t, b.jobs.YieldJob(ctx, id, "w", at, rs, hs))
					claim("w")
				}
				if c.saved > 0 {
					rs, hs := batch(c.saved)
					require.NoError(t, b.jobs.SaveJobResults(ctx, id, "w", rs, hs))
				}
				rs, hs := batch(c.at)
				require.NoError(t, b.jobs.FinishJob(ctx, id, "w", domain.JobCompleted, at, nil, rs, hs))

				q := domain.MetricsQuery{AccountID: b.account.ID, PolicyVersionID: version, Labels: []string{"A"}}
				want, err := metrics.ScanVersionMetrics(ctx, q)
				require.NoError(t, err)
				got, err := metrics.VersionMetrics(ctx, q)
				require.NoError(t, err)
				require.Equal(t, want, got)
				require.Equal(t, seq, got[0].Evaluations)
				require.Equal(t, seq, got[0].Positives)
			})
		}
	})
}

// A job that was running, with results stored, when migration 00174 ran
// counts them when it completes after the upgrade; a finished job's flag
// stays unset.
func TestJobs_MigratedRunningJobCountsItsStoredResults(t *testing.T) {
	t.Parallel()
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := b.OpenUnmigrated(t)
			require.NoError(t, db.MigrateTo(ctx, 173))
			exec := func(q string, args ...any) {
				t.Helper()
				_, err := db.ExecContext(ctx, db.Rebind(q), args...)
				require.NoError(t, err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			exec(`INSERT INTO accounts (id, name, type, created, updated) VALUES ('a', 'a', 'policy-first', ?, ?)`, now, now)
			running, done := domain.NewIDAt(now), domain.NewIDAt(now)
			for _, j := range []struct{ id, status string }{{running, "running"}, {done, "completed"}} {
				exec(`INSERT INTO jobs (id, account_id, job_type, status, policy_version_id, threshold, lease_owner, lease_expires_at, created, updated)
					VALUES (?, 'a', 'JOB_TYPE_STANDARD', ?, 'v', 0.5, 'w', ?, ?, ?)`, j.id, j.status, now.Add(time.Hour), now, now)
				exec(`INSERT INTO job_results (id, job_id, seq, content_hash, created) VALUES (?, ?, 0, 'sha256::00', ?)`, j.id+"-r", j.id, now)
			}
			require.NoError(t, db.Migrate(ctx))

			var saved []bool
			require.NoError(t, db.SelectContext(ctx, &saved, db.Rebind(`SELECT results_saved FROM jobs WHERE id IN (?, ?) ORDER BY status DESC`), running, done))
			require.Equal(t, []bool{true, false}, saved, "running, completed")
			jobs := persistence.NewJobs(db)
			r := &domain.JobResult{ID: running + "-r1", JobID: running, Index: 1, Created: now}
			require.NoError(t, jobs.FinishJob(ctx, running, "w", domain.JobCompleted, now, nil, []*domain.JobResult{r}, nil))
			got, err := persistence.NewQualityMetrics(db).VersionMetrics(ctx, domain.MetricsQuery{AccountID: "a", PolicyVersionID: "v", Labels: []string{"A"}})
			require.NoError(t, err)
			require.Equal(t, 2, got[0].Evaluations, "the result stored before the upgrade counts")
		})
	}
}
