package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// A group task that ends without ending one of its jobs (a write it could
// not make taken for a lost lease, as a conflict reported ABORTED is; a
// finish that missed the job) must not leave the job held with no worker:
// the worker releases it and it is claimed again at once. Before, it kept
// its lease until expiry (an hour here; forever under a clock that stands
// still, as in the end-to-end tests) and nothing was logged. A task that
// ends its jobs itself, or that fails (left to its lease, as documented),
// is left alone.
func TestRunGroupReleasesJobsLeftHeld(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// first is what the task does on the job's first claim.
		first      func(ctx context.Context, store *persistence.Jobs, j *domain.Job) error
		wantClaims int // claims of the job within the test
	}{
		{name: "left held", first: func(context.Context, *persistence.Jobs, *domain.Job) error { return nil }, wantClaims: 2},
		{name: "lease taken for lost", first: func(context.Context, *persistence.Jobs, *domain.Job) error {
			return domain.Errorf(domain.Aborted, "the operation conflicted with a concurrent one; retry it")
		}, wantClaims: 2},
		{name: "ended by the task", first: func(ctx context.Context, store *persistence.Jobs, j *domain.Job) error {
			return store.FinishJob(ctx, j.ID, j.LeaseOwner, domain.JobCompleted, time.Now(), nil, nil, nil)
		}, wantClaims: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
				f := newJobsFixture(t, db)
				store := persistence.NewJobs(db)
				s := jobs.NewService(store, nil, persistence.NewAccounts(db), domain.SystemClock{}, nil,
					jobs.Config{Lease: time.Hour, PollInterval: 10 * time.Millisecond, Concurrency: 1}, nil)
				var mu sync.Mutex
				var claims []*domain.Job
				s.HandleBackgroundGroup(domain.JobTypeShadow, func(ctx context.Context, js []*domain.Job, _ *evaluation.ItemRunner) error {
					mu.Lock()
					defer mu.Unlock()
					for _, j := range js {
						c := *j
						claims = append(claims, &c)
					}
					if len(claims) == 1 {
						return tc.first(ctx, store, js[0])
					}
					return store.FinishJob(ctx, js[0].ID, js[0].LeaseOwner, domain.JobCompleted, time.Now(), nil, nil, nil)
				})
				now := time.Now()
				job := &domain.Job{ID: domain.NewID(), AccountID: f.account.ID, Type: domain.JobTypeShadow, Status: domain.JobPending,
					PolicyID: f.policy, Options: map[string]string{}, Input: []domain.ContentItem{}, Contents: []domain.ContentSummary{},
					Created: now, Updated: now}
				require.NoError(t, store.CreateJob(t.Context(), job))
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { defer close(done); s.RunWorkers(ctx) }()
				t.Cleanup(func() { cancel(); <-done })

				// The job ends completed either way: at once when its task
				// ended it, after its second claim when the worker released it.
				require.Eventually(t, func() bool {
					var status string
					err := db.GetContext(t.Context(), &status, db.Rebind(`SELECT status FROM jobs WHERE id = ?`), job.ID)
					return err == nil && status == string(domain.JobCompleted)
				}, time.Minute, 10*time.Millisecond, "the job never ended")
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, claims, tc.wantClaims)
				for i, c := range claims {
					require.Equal(t, 1+i, c.Attempts, "a release keeps the claim's attempt")
				}
			})
		})
	}
}
