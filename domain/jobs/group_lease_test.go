package jobs

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
)

// leaseStore is a job store that only renews leases: those of the jobs
// not in released (ABORTED for those, as the store answers for a job its
// owner no longer holds), and finds no job left held when a task ends.
// Any other call panics through the nil interface.
type leaseStore struct {
	domain.JobStore
	mu       sync.Mutex
	released map[string]bool
}

func (s *leaseStore) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released[id] = true
}

func (s *leaseStore) RenewLease(_ context.Context, id, _ string, _, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released[id] {
		return domain.Errorf(domain.Aborted, "job %s not held", id)
	}
	return nil
}

// ReleaseClaims finds every job ended by its task.
func (s *leaseStore) ReleaseClaims(context.Context, []*domain.Job, time.Time) ([]string, error) {
	return nil, nil
}

// TestRunGroupLeases: a group task that hands some of its jobs back (a
// shadow job yielding its worker) and then records the others must keep
// its context through the renewals that follow: the handed-back jobs'
// renewals fail as a lost lease would. Before, the first such renewal
// canceled the group's context, the write of the jobs the task had
// finished failed, and they stayed leased until their lease expired. The
// context still ends when none of the group's jobs is held any more.
func TestRunGroupLeases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		released   []string // by the task, before it records the others
		wantCancel bool
	}{
		{name: "nothing handed back", wantCancel: false},
		{name: "one job handed back", released: []string{"b"}, wantCancel: false},
		{name: "every job handed back", released: []string{"a", "b"}, wantCancel: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				store := &leaseStore{released: map[string]bool{}}
				const lease = 30 * time.Second
				s := NewService(store, nil, nil, domain.SystemClock{}, nil, Config{Lease: lease}, nil)
				js := []*domain.Job{{ID: "a", LeaseOwner: s.Owner()}, {ID: "b", LeaseOwner: s.Owner()}}
				var canceled bool
				s.runGroup(context.Background(), js, func(ctx context.Context, js []*domain.Job, _ *evaluation.ItemRunner) error {
					for _, id := range tc.released {
						store.release(id)
					}
					// Past two renewals of every job, as a slow write of
					// the others would be.
					time.Sleep(lease)
					canceled = ctx.Err() != nil
					return nil
				})
				require.Equal(t, tc.wantCancel, canceled, "the group's context ended")
			})
		})
	}
}
