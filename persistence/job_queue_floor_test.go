package persistence_test

import (
	"net/url"
	"os"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/internal/testwait"
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

// TestJobs_QueueFloorUnderConcurrentWrites: jobs written with old ids (as
// a resumed batch writes them) while claims raise the floor at every call:
// every job is claimed, none left below a floor raised past it.
func TestJobs_QueueFloorUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		b := setupJobs(t, db)
		const writers, perWriter = 4, 25
		var clock atomic.Int64 // minutes after t0: each claim is two later
		now := func() time.Time { return t0.Add(time.Duration(clock.Load()) * time.Minute) }
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWriter {
					at := t0.Add(-time.Duration(w*perWriter+i+1) * time.Hour)
					j := &domain.Job{ID: domain.NewIDAt(at), AccountID: b.account.ID, Type: domain.JobTypeBatch,
						Status: domain.JobPending, Threshold: 0.5, Created: at, Updated: now()}
					if err := b.jobs.CreateJob(ctx, j); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		claimed := map[string]bool{}
		claim := func() int {
			got, err := b.jobs.ClaimJobs(ctx, "w", now(), now().Add(time.Hour), 7, 0)
			require.NoError(t, err)
			for _, j := range got {
				require.False(t, claimed[j.ID], "job %s claimed twice", j.ID)
				claimed[j.ID] = true
				require.NoError(t, b.jobs.FinishJob(ctx, j.ID, "w", domain.JobCompleted, now(), nil, nil, nil))
			}
			clock.Add(2)
			return len(got)
		}
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
				claim()
			}
		}
		for claim() > 0 {
		}
		require.Len(t, claimed, writers*perWriter)
	})
}

// TestJobs_QueueFloorRaiseWaitsForALowering: another replica writes a job
// with an old id while this one raises the floor, between the raise's read
// of the lowest unfinished id (which cannot see the job yet) and its write
// of the floor. The replica's lowering must wait for the raise and lower
// what it wrote; if it went first, the raise would write over it and the
// job would never be claimed.
func TestJobs_QueueFloorRaiseWaitsForALowering(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	ctx := t.Context()
	b := setupJobs(t, db)
	var schema string
	require.NoError(t, db.GetContext(ctx, &schema, `SELECT current_schema()`))
	u, err := url.Parse(os.Getenv("CONTENTEVAL_TEST_DATABASE_URL"))
	require.NoError(t, err)
	app := "floor-" + domain.NewID()
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	other, err := persistence.Open(ctx, u.String())
	require.NoError(t, err)
	defer other.Close()

	_, err = b.jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 8, 0)
	require.NoError(t, err)
	later := t0.Add(48 * time.Hour) // a raise at it has a day to go up
	old := &domain.Job{ID: domain.NewIDAt(t0.Add(-72 * time.Hour)), AccountID: b.account.ID, Type: domain.JobTypeBatch,
		Status: domain.JobPending, Threshold: 0.5, Created: t0.Add(-72 * time.Hour), Updated: later}
	written := make(chan error, 1)
	persistence.AfterQueueFloorMin(db, func() {
		persistence.AfterQueueFloorMin(db, nil)
		go func() { written <- persistence.NewJobs(other).CreateJob(ctx, old) }()
		testwait.For(t, 30*time.Second, "the other replica's write to end or wait for the raise", func() (bool, error) {
			select {
			case err := <-written:
				written <- err
				return true, nil
			default:
			}
			var n int
			err := db.GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity
				WHERE application_name = $1 AND cardinality(pg_blocking_pids(pid)) > 0`, app)
			return n > 0, err
		})
	})
	// The claim whose raise this is may claim the job itself (the
	// lowering commits as soon as the raise does); if not, the next does.
	got, err := b.jobs.ClaimJobs(ctx, "w", later, later.Add(time.Hour), 8, 0)
	require.NoError(t, err)
	require.NoError(t, <-written)
	next, err := b.jobs.ClaimJobs(ctx, "w", later.Add(2*time.Minute), later.Add(time.Hour), 8, 0)
	require.NoError(t, err)
	got = append(got, next...)
	require.Len(t, got, 1, "the job written during the raise is not claimable")
	require.Equal(t, old.ID, got[0].ID)
}
