package jobs

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// Task runs a claimed job of an internal type (domain.InternalJobTypes):
// work that is queued, leased and shared fairly like the jobs clients
// submit, but whose evaluation and outcome belong to another aggregate
// (dataset runs, shadow evaluations). It evaluates through runner, the one
// item runner, and must end j itself, in the transaction that records its
// outcome, guarded by j.LeaseOwner. ctx ends when the process shuts down or
// the lease is lost. An error leaves j to its lease's expiry and a later
// attempt (j.Attempts counts them); a task gives up on j after as many
// attempts as it sees fit.
type Task func(ctx context.Context, j *domain.Job, runner *ItemRunner) error

// HandleType makes the workers run jobs of type t with task. It must be
// called before RunWorkers.
func (s *Service) HandleType(t domain.JobType, task Task) {
	s.tasks[t] = task
}

// GroupTask runs claimed jobs of one internal type together, each of them
// to its end as a Task does (the error leaves every job it did not end to
// its lease's expiry): work whose per-job costs (a transaction to record
// each) are worth sharing.
type GroupTask func(ctx context.Context, js []*domain.Job, runner *ItemRunner) error

// HandleBackgroundGroup makes the workers run jobs of type t with task, the
// jobs of one claim together, as background work: work no client waits
// for and that must not slow those who do (shadow evaluations). A group
// starts when this process runs no evaluation for a waiting client, or
// after backgroundPatience. It must be called before RunWorkers.
func (s *Service) HandleBackgroundGroup(t domain.JobType, task GroupTask) {
	s.groups[t] = task
}

// backgroundPatience bounds how long a background task waits for a gap in
// the synchronous work.
const backgroundPatience = 50 * time.Millisecond

// YieldToLive returns once this process runs no evaluation for a waiting
// client (or after a short patience, or when ctx ends): a background task
// calls it between its steps, so that each step starts in a gap.
func (s *Service) YieldToLive(ctx context.Context) {
	s.live.wait(ctx, backgroundPatience)
}

// run runs a claimed job: with the task of its type, or as a client's job.
func (s *Service) run(ctx context.Context, j *domain.Job) {
	task, ok := s.tasks[j.Type]
	if !ok {
		s.execute(ctx, j, nil, nil)
		return
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := s.renewWhileRunning(tctx, cancel, j)
	defer stop()
	err := task(tctx, j, s.runner)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		s.abandon(ctx, j, err)
	case tctx.Err() != nil || domain.ErrorCode(err) == domain.Aborted:
		s.log.Warn("internal job lease lost", "job", j.ID, "type", string(j.Type))
	default:
		s.log.Error("internal job failed; it will be retried after its lease expires", "job", j.ID,
			"type", string(j.Type), "attempt", j.Attempts, "error", err.Error())
	}
}

// runGroup runs the claimed jobs js of a group type with task.
func (s *Service) runGroup(ctx context.Context, js []*domain.Job, task GroupTask) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, j := range js {
		stop := s.renewWhileRunning(tctx, cancel, j)
		defer stop()
	}
	s.YieldToLive(tctx)
	err := task(tctx, js, s.runner)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		for _, j := range js {
			s.abandon(ctx, j, err)
		}
	case tctx.Err() != nil || domain.ErrorCode(err) == domain.Aborted:
		s.log.Warn("internal jobs' lease lost", "jobs", len(js), "type", string(js[0].Type))
	default:
		s.log.Error("internal jobs failed; they will be retried after their lease expires", "jobs", len(js),
			"type", string(js[0].Type), "error", err.Error())
	}
}
