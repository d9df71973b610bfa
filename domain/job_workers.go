package domain

import (
	"context"
	"sync"
	"time"
)

// The queue side of JobService: the workers' claim loop, lease renewal,
// and shutdown of the jobs this process runs for requests.

func (s *JobService) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// renewWhileRunning renews j's lease every third of the lease until stopped;
// losing the lease cancels the job's context through cancel.
func (s *JobService) renewWhileRunning(ctx context.Context, cancel context.CancelFunc, j *Job) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				now := s.clock.Now()
				err := s.jobs.RenewLease(ctx, j.ID, j.LeaseOwner, now.Add(s.cfg.Lease), now)
				if ErrorCode(err) == Aborted {
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// RunWorkers claims and runs queued jobs until ctx ends, then releases the
// jobs still running and returns. Several processes may run workers on one
// database; the store's claims and leases make each job run to completion
// once.
func (s *JobService) RunWorkers(ctx context.Context) {
	slots := make(chan struct{}, s.cfg.Concurrency)
	freed := make(chan struct{}, s.cfg.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	for {
		free := s.cfg.Concurrency - len(slots)
		claimed := 0
		if free > 0 && ctx.Err() == nil {
			now := s.clock.Now()
			jobs, err := s.jobs.ClaimJobs(ctx, s.owner, now, now.Add(s.cfg.Lease), free, s.cfg.AccountMaxRunning)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("claiming jobs", "error", err.Error())
			}
			claimed = len(jobs)
			for _, j := range jobs {
				slots <- struct{}{}
				running.Add(1)
				go func() {
					defer running.Done()
					defer func() {
						<-slots
						select {
						case freed <- struct{}{}:
						default:
						}
					}()
					s.execute(ctx, j, nil, nil)
				}()
			}
		}
		if claimed > 0 && claimed == free {
			continue // there may be more, and no slot is free anyway
		}
		timer := time.NewTimer(s.cfg.PollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
		case <-freed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Shutdown stops the jobs this process runs for requests (synchronous and
// streamed) and waits for them, up to ctx.
func (s *JobService) Shutdown(ctx context.Context) {
	s.bgCancel()
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
