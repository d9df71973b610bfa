package jobs

import (
	"context"
	"github.com/contenteval/contenteval/domain/traces"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// The queue side of Service: the workers' claim loop, lease renewal,
// and shutdown of the jobs this process runs for requests.

// Notify wakes this process's workers: jobs were queued.
func (s *Service) Notify() {
	if f := s.fair.Load(); f != nil {
		f.markStale()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// renewWhileRunning keeps j's lease while it runs; losing it cancels the
// job's context through cancel. The lease is the one j holds now: j's
// fields are rewritten when it finishes (finishAfter), while a renewal may
// still be under way, so the renewer keeps its own copy.
func (s *Service) renewWhileRunning(ctx context.Context, cancel context.CancelFunc, j *domain.Job) (stop func()) {
	id, owner := j.ID, j.LeaseOwner
	return KeepLease(ctx, cancel, s.cfg.Lease, func(ctx context.Context) error {
		now := s.clock.Now()
		return s.jobs.RenewLease(ctx, id, owner, now.Add(s.cfg.Lease), now)
	})
}

// RunWorkers claims and runs queued jobs until ctx ends, then releases the
// jobs still running and returns. Several processes may run workers on one
// database; the store's claims and leases make each job run to completion
// once.
func (s *Service) RunWorkers(ctx context.Context) {
	slots := make(chan struct{}, s.cfg.Concurrency)
	freed := make(chan struct{}, s.cfg.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	fair := &fairShare{store: s.jobs, owner: s.owner, clock: s.clock, every: s.cfg.PollInterval,
		accountMax: s.cfg.AccountMaxRunning, freeSlots: func() int { return s.cfg.Concurrency - len(slots) }, log: s.log}
	s.fair.Store(fair)
	defer s.fair.Store(nil)
	s.stats.pass(s.clock.Now())
	// start runs fn in n slots (there are n free).
	start := func(n int, fn func()) {
		for range n {
			slots <- struct{}{}
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() {
				for range n {
					<-slots
				}
				select {
				case freed <- struct{}{}:
				default:
				}
			}()
			fn()
		}()
	}
	PollLoop(ctx, s.cfg.PollInterval, s.wake, freed, func() bool {
		// A round with every slot busy is a live loop too.
		s.stats.pass(s.clock.Now())
		free := s.cfg.Concurrency - len(slots)
		if free == 0 {
			return false
		}
		now := s.clock.Now()
		handedOver := fair.beforeClaim()
		began := time.Now()
		jobs, err := s.jobs.ClaimJobs(ctx, s.owner, now, now.Add(s.cfg.Lease), free, s.cfg.AccountMaxRunning)
		traces.Claimed(ctx, "jobs.claim", began, len(jobs))
		s.stats.Claimed.Add(int64(len(jobs)))
		fair.claimed(handedOver)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("claiming jobs", "error", err.Error())
		}
		// Each job runs in a slot of its own, but the jobs of a group type
		// run together, in as many slots.
		grouped := map[domain.JobType][]*domain.Job{}
		for _, j := range jobs {
			if _, ok := s.groups[j.Type]; ok {
				grouped[j.Type] = append(grouped[j.Type], j)
				continue
			}
			// The run is a span of the trace of the request that queued
			// the job (its stored trace context; docs/operations.md#tracing).
			start(1, func() { s.run(traces.Resume(ctx, j.TraceParent, j.TraceState), j); s.stats.Finished.Add(1) })
		}
		for t, js := range grouped {
			start(len(js), func() { s.runGroup(ctx, js, s.groups[t]); s.stats.Finished.Add(int64(len(js))) })
		}
		// A full claim may have left more behind, and no slot is free to
		// wait for anyway.
		return len(jobs) > 0 && len(jobs) == free
	})
}

// Shutdown stops the jobs this process runs for requests (synchronous and
// streamed) and waits for them, up to ctx.
func (s *Service) Shutdown(ctx context.Context) {
	s.bgCancel()
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
