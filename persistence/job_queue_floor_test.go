package persistence_test

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestJobs_QueueFloor: a claim raises the queue's floor no higher than the
// oldest unfinished job, and to the day before its clock's when none is
// left; a job written unfinished with an older id (a resumed batch's, or
// one dated before the floor this process saw) lowers it and is claimed;
// and on PostgreSQL the claim's plan holds no day partition below the
// floor. SQLite has no floor: the same jobs are claimed.
func TestJobs_QueueFloor(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		pg := db.Dialect == persistence.Postgres
		day := 24 * time.Hour
		if pg {
			_, err := persistence.NewRetention(db).EnsurePartitions(ctx, t0.Add(-10*day), t0.Add(day))
			require.NoError(t, err)
		}
		b := setupJobs(t, db)
		floor := func() string {
			f, err := persistence.QueueFloor(ctx, db)
			require.NoError(t, err)
			return f
		}
		claimAt := func(now time.Time) []string {
			got, err := b.jobs.ClaimJobs(ctx, "w", now, now.Add(time.Hour), 10, 0)
			require.NoError(t, err)
			var ids []string
			for _, j := range got {
				require.NoError(t, b.jobs.FinishJob(ctx, j.ID, "w", domain.JobCompleted, now, nil, nil, nil))
				ids = append(ids, j.ID)
			}
			slices.Sort(ids)
			return ids
		}
		job := func(idAt time.Time) string { return b.newJob(t, domain.NewIDAt(idAt), idAt, false).ID }
		now := t0

		// A job queued five days before the claim's clock: the raise stops
		// at it.
		old := job(t0.Add(-5 * day))
		require.Equal(t, []string{old}, claimAt(now))
		if pg {
			require.LessOrEqual(t, floor(), old)
			require.NotEmpty(t, floor())
		}

		// Nothing queued: the next raise goes to the start of the day an
		// hour before the claim's clock.
		now = now.Add(2 * time.Minute)
		require.Empty(t, claimAt(now))
		if pg {
			top := domain.NewIDAt(time.Date(t0.Year(), t0.Month(), t0.Day(), 0, 0, 0, 0, time.UTC))[:13]
			require.Equal(t, top, floor())
			// The claim's statements plan no partition of a day below it.
			read, claim, err := b.jobs.ExplainQueue(ctx, "w", b.account.ID, now, 8)
			require.NoError(t, err)
			days := partitionDays(read + claim)
			require.NotEmpty(t, days, "the plans name no day partition:\n%s%s", read, claim)
			for _, d := range days {
				require.GreaterOrEqual(t, d, t0.Format("20060102"), "a partition below the floor is planned:\n%s%s", read, claim)
			}
		}

		// A resumed batch's job: its id was made three days ago, it is
		// written now, by a process that never saw the floor.
		persistence.ForgetQueueFloor(db)
		batchAt := t0.Add(-3 * day)
		resumed := &domain.Job{ID: domain.NewIDAt(batchAt), AccountID: b.account.ID, Type: domain.JobTypeBatch,
			Status: domain.JobPending, Threshold: 0.5, Created: batchAt, Updated: now}
		require.NoError(t, b.jobs.CreateJob(ctx, resumed))
		if pg {
			require.Equal(t, resumed.ID, floor())
		}
		now = now.Add(2 * time.Minute)
		require.Equal(t, []string{resumed.ID}, claimAt(now))

		// A job dated (by its own clock) before the floor this process
		// saw: written as fresh, it still lowers the floor.
		now = now.Add(2 * time.Minute)
		require.Empty(t, claimAt(now))
		behind := job(t0.Add(-2 * day))
		require.Equal(t, []string{behind}, claimAt(now.Add(time.Second)))
	})
}

// partitionDays returns the days of the jobs partitions a plan names.
func partitionDays(plan string) []string {
	var days []string
	for _, m := range jobsDayPartition.FindAllStringSubmatch(plan, -1) {
		days = append(days, m[1])
	}
	return days
}

var jobsDayPartition = regexp.MustCompile(`jobs_p([0-9]{8})`)
