package jobs

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
)

// Task runs a claimed job of an internal type (domain.InternalJobTypes):
// work that is queued, leased and shared fairly like the jobs clients
// submit, but whose evaluation and outcome belong to another aggregate
// (dataset runs, shadow evaluations). It evaluates through runner, the one
// item runner, and must end j itself, in the transaction that records its
// outcome, guarded by j.LeaseOwner. ctx ends when the process shuts down or
// the lease is lost. An error leaves j to its lease's expiry and a later
// attempt (j.Attempts counts them); a task gives up on j after as many
// attempts as it sees fit. A task that returns nil (or loses its lease)
// and yet left j running under its claim gets j released to the queue by
// the worker (releaseLeftHeld): no claimed job stays held without one.
type Task func(ctx context.Context, j *domain.Job, runner *evaluation.ItemRunner) error

// HandleType makes the workers run jobs of type t with task. It must be
// called before RunWorkers.
func (s *Service) HandleType(t domain.JobType, task Task) {
	s.tasks[t] = task
}

// GroupTask runs claimed jobs of one internal type together, each of them
// to its end as a Task does (the error leaves every job it did not end to
// its lease's expiry): work whose per-job costs (a transaction to record
// each) are worth sharing. ctx ends when the process shuts down or none of
// the jobs is held any more: a job the task ended itself, or lost, leaves
// the others to it.
type GroupTask func(ctx context.Context, js []*domain.Job, runner *evaluation.ItemRunner) error

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
	ctx, span := startJobSpan(ctx, "jobs.run", j)
	defer span.End()
	task, ok := s.tasks[j.Type]
	if !ok {
		s.execute(ctx, j, nil, nil)
		return
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := s.renewWhileRunning(tctx, cancel, j)
	defer stop()
	claims := claimsOf([]*domain.Job{j})
	err := task(tctx, j, s.runner)
	switch {
	case err == nil:
		s.releaseLeftHeld(claims)
	case ctx.Err() != nil:
		s.abandon(ctx, j, err)
	case tctx.Err() != nil || domain.ErrorCode(err) == domain.Aborted:
		s.log.Warn("internal job lease lost", "job", j.ID, "type", string(j.Type))
		s.releaseLeftHeld(claims)
	default:
		s.log.Error("internal job failed; it will be retried after its lease expires", "job", j.ID,
			"type", string(j.Type), "attempt", j.Attempts, "error", err.Error())
	}
}

// claimsOf returns what identifies the claims of js (id, owner, attempts,
// yields), before a task changes any of them.
func claimsOf(js []*domain.Job) []*domain.Job {
	out := make([]*domain.Job, len(js))
	for i, j := range js {
		out[i] = &domain.Job{ID: j.ID, AccountID: j.AccountID, Type: j.Type, LeaseOwner: j.LeaseOwner, Attempts: j.Attempts, Yields: j.Yields}
	}
	return out
}

// releaseLeftHeld returns to the queue the jobs of claims that a task,
// which ended without an error of its own (or with its lease lost), left
// running under the claim: it should have ended each of them, and a job
// left so would keep its lease with no worker until the lease expires
// (forever, on a clock that stands still). A write the task could not
// make, taken for a lost lease (a conflict reported as ABORTED), or a
// finish that found the job not held, would otherwise strand it
// silently. Not the task's context: it may have ended.
func (s *Service) releaseLeftHeld(claims []*domain.Job) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	released, err := s.jobs.ReleaseClaims(ctx, claims, s.clock.Now())
	if err != nil {
		s.log.Warn("releasing the jobs a task left held; they will be retried after their lease expires",
			"jobs", len(claims), "type", string(claims[0].Type), "error", err.Error())
		return
	}
	if len(released) > 0 {
		s.log.Warn("a task ended leaving jobs held; released to the queue", "jobs", released, "type", string(claims[0].Type))
		s.Notify()
	}
}

// runGroup runs the claimed jobs js of a group type with task.
func (s *Service) runGroup(ctx context.Context, js []*domain.Job, task GroupTask) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One job's renewal failing ends the group's work only once none of
	// its jobs is held: the task ends some of them itself before the rest
	// (a shadow job handed back to the queue mid-group), and their
	// renewals then fail as a lost lease would; canceling on the first
	// would fail the write of the others and leave them leased until
	// expiry. KeepLease calls its cancel at most once.
	var held atomic.Int32
	held.Store(int32(len(js)))
	lost := func() {
		if held.Add(-1) == 0 {
			cancel()
		}
	}
	for _, j := range js {
		stop := s.renewWhileRunning(tctx, lost, j)
		defer stop()
	}
	claims := claimsOf(js)
	s.YieldToLive(tctx)
	err := task(tctx, js, s.runner)
	switch {
	case err == nil:
		s.releaseLeftHeld(claims)
	case ctx.Err() != nil:
		for _, j := range js {
			s.abandon(ctx, j, err)
		}
	case tctx.Err() != nil || domain.ErrorCode(err) == domain.Aborted:
		s.log.Warn("internal jobs' lease lost", "jobs", len(js), "type", string(js[0].Type))
		s.releaseLeftHeld(claims)
	default:
		s.log.Error("internal jobs failed; they will be retried after their lease expires", "jobs", len(js),
			"type", string(js[0].Type), "error", err.Error())
	}
}
