package quality

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// shadowQueue records what the shadow task does with the jobs it gives up;
// the yields of the ids in failing fail as an unreachable database would.
// Any other store call panics through the nil interfaces.
type shadowQueue struct {
	domain.JobStore
	domain.ShadowStore
	failing  map[string]bool
	mu       sync.Mutex
	yielded  []string
	released []string
}

func (q *shadowQueue) yield(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing[id] {
		return domain.Errorf(domain.Unavailable, "the database is unreachable")
	}
	q.yielded = append(q.yielded, id)
	return nil
}

func (q *shadowQueue) YieldShadowJob(_ context.Context, y domain.ShadowFinish, _ map[string]string, _ time.Time) error {
	return q.yield(y.JobID)
}

func (q *shadowQueue) YieldJob(_ context.Context, id, _ string, _ time.Time, _ []*domain.JobResult, _ []*domain.LabelHit) error {
	return q.yield(id)
}

func (q *shadowQueue) ReleaseJob(_ context.Context, id, _ string, _ time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.released = append(q.released, id)
	return nil
}

// TestShadowJobsGivenUp: a shadow job the worker gives up is back in the
// queue when the worker is done with it, not left leased to its expiry:
// a yield that cannot be written releases the job, and so does an
// evaluation error short of the last attempt.
func TestShadowJobsGivenUp(t *testing.T) {
	t.Parallel()
	job := func(id string) *domain.Job {
		return &domain.Job{ID: id, LeaseOwner: "worker", Attempts: 1,
			Options: map[string]string{domain.ShadowActiveOption: "[]", domain.ShadowOfOption: "live-" + id}}
	}
	tests := []struct {
		name         string
		failing      []string
		run          func(s *Service) error
		wantYielded  []string
		wantReleased []string
	}{
		{name: "yields written", run: func(s *Service) error {
			s.yieldShadows(&shadowPart{job: job("a"), next: 3, rest: []*domain.Job{job("b")}})
			return nil
		}, wantYielded: []string{"a", "b"}},
		{name: "the yield of the job under way fails", failing: []string{"a"}, run: func(s *Service) error {
			s.yieldShadows(&shadowPart{job: job("a"), next: 3, rest: []*domain.Job{job("b")}})
			return nil
		}, wantYielded: []string{"b"}, wantReleased: []string{"a"}},
		{name: "the yield of a job not begun fails", failing: []string{"b"}, run: func(s *Service) error {
			s.yieldShadows(&shadowPart{job: job("a"), next: 3, rest: []*domain.Job{job("b")}})
			return nil
		}, wantYielded: []string{"a"}, wantReleased: []string{"b"}},
		{name: "an evaluation error", run: func(s *Service) error {
			j := job("a")
			j.Options[domain.ShadowActiveOption] = "not JSON"
			return s.runShadows(context.Background(), []*domain.Job{j}, nil)
		}, wantReleased: []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &shadowQueue{failing: map[string]bool{}}
			for _, id := range tc.failing {
				q.failing[id] = true
			}
			s := &Service{d: Deps{JobStore: q, Shadows: q, Clock: domain.SystemClock{}, Log: slog.New(slog.DiscardHandler)}}
			if err := tc.run(s); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(q.yielded, tc.wantYielded) || !slices.Equal(q.released, tc.wantReleased) {
				t.Errorf("yielded %v, released %v; want yielded %v, released %v", q.yielded, q.released, tc.wantYielded, tc.wantReleased)
			}
		})
	}
}
