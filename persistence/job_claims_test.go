package persistence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// ReleaseClaims gives back only the jobs still running under the very
// claim it is given: not a job its task ended (yielded, released,
// finished), and not a later claim of the same job by the same owner (a
// worker of the same process), which another worker is running.
func TestJobs_ReleaseClaims(t *testing.T) {
	t.Parallel()
	const owner = "worker"
	now := t0.Add(time.Hour)
	cases := []struct {
		name string
		// after runs on the claimed job before ReleaseClaims is given the
		// first claim; it returns the job's claim to release instead when
		// it claims again.
		after        func(t *testing.T, b *jobsBundle, j *domain.Job) *domain.Job
		wantReleased bool
		wantStatus   domain.JobStatus
	}{
		{name: "left held by its task", wantReleased: true, wantStatus: domain.JobPending},
		{name: "yielded by its task", after: func(t *testing.T, b *jobsBundle, j *domain.Job) *domain.Job {
			require.NoError(t, b.jobs.YieldJob(t.Context(), j.ID, owner, now, nil, nil))
			return nil
		}, wantStatus: domain.JobPending},
		{name: "finished by its task", after: func(t *testing.T, b *jobsBundle, j *domain.Job) *domain.Job {
			require.NoError(t, b.jobs.FinishJob(t.Context(), j.ID, owner, domain.JobFailed, now, &domain.ErrJobInternal, nil, nil))
			return nil
		}, wantStatus: domain.JobFailed},
		{name: "yielded, then claimed again by the same owner", after: func(t *testing.T, b *jobsBundle, j *domain.Job) *domain.Job {
			require.NoError(t, b.jobs.YieldJob(t.Context(), j.ID, owner, now, nil, nil))
			again, err := b.jobs.ClaimJobs(t.Context(), owner, now, now.Add(time.Minute), 1, 0)
			require.NoError(t, err)
			require.Len(t, again, 1)
			return nil
		}, wantStatus: domain.JobRunning},
		{name: "released, then claimed again by the same owner", after: func(t *testing.T, b *jobsBundle, j *domain.Job) *domain.Job {
			require.NoError(t, b.jobs.ReleaseJob(t.Context(), j.ID, owner, now))
			again, err := b.jobs.ClaimJobs(t.Context(), owner, now, now.Add(time.Minute), 1, 0)
			require.NoError(t, err)
			require.Len(t, again, 1)
			return nil
		}, wantStatus: domain.JobRunning},
		{name: "the later claim itself", after: func(t *testing.T, b *jobsBundle, j *domain.Job) *domain.Job {
			require.NoError(t, b.jobs.YieldJob(t.Context(), j.ID, owner, now, nil, nil))
			again, err := b.jobs.ClaimJobs(t.Context(), owner, now, now.Add(time.Minute), 1, 0)
			require.NoError(t, err)
			require.Len(t, again, 1)
			return again[0]
		}, wantReleased: true, wantStatus: domain.JobPending},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A database each: a claim takes the queue's oldest job.
			persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
				b := setupJobs(t, db)
				b.newJob(t, domain.NewID(), t0, false)
				claimed, err := b.jobs.ClaimJobs(t.Context(), owner, now, now.Add(time.Minute), 1, 0)
				require.NoError(t, err)
				require.Len(t, claimed, 1)
				claim := claimed[0]
				if tc.after != nil {
					if later := tc.after(t, b, claim); later != nil {
						claim = later
					}
				}
				released, err := b.jobs.ReleaseClaims(t.Context(), []*domain.Job{claim}, now)
				require.NoError(t, err)
				if tc.wantReleased {
					require.Equal(t, []string{claim.ID}, released)
				} else {
					require.Empty(t, released)
				}
				got, err := b.jobs.GetJob(t.Context(), b.account.ID, claim.ID)
				require.NoError(t, err)
				require.Equal(t, tc.wantStatus, got.Status)
			})
		})
	}
}
