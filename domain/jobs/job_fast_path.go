package jobs

import (
	"context"
	"github.com/contenteval/contenteval/domain/traces"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/rules"
)

// fastPathMaxText bounds the text of a synchronous job that takes the fast
// path: small enough to evaluate in milliseconds with the built-in
// evaluators.
const fastPathMaxText = 64 << 10

// fastPathGrace is how long a fast-path job may be evaluated before it is
// stored. The built-in evaluators end well within it; a model backend may
// take far longer, and a job it holds past the grace is stored running, so
// that it is listed while it runs and the wait cap holds.
const fastPathGrace = 100 * time.Millisecond

// fastPath reports whether a synchronous job may be evaluated before it is
// stored and then recorded finished in one write, instead of being stored
// running, evaluated under a lease and finished (two writes): small text-only
// jobs of accounts without a daily quota (charging needs the stored job).
// The trade: such a job is recorded only once it is done or its grace has
// passed, so a crash within that grace leaves no record; the client, whose
// request fails with the crash, never learned its id either.
func (s *Service) fastPath(j *domain.Job, account *domain.Account) bool {
	if account.Limits.EvaluationsPerDay > 0 {
		return false
	}
	total := 0
	for _, it := range j.Input {
		if it.Kind != domain.ContentText {
			return false
		}
		total += len(it.Text)
	}
	return total <= fastPathMaxText
}

// runFast evaluates j (see fastPath) under the process's lifetime, not the
// request's, so a client that goes away does not leave the job half done.
// An evaluation that ends within fastPathGrace is recorded finished in one
// write and the job is returned. Otherwise j is stored running under this
// process's lease and the returned run finishes it, whenever its evaluators
// answer.
func (s *Service) runFast(ctx context.Context, j *domain.Job, plan *rules.Plan) (*domain.Job, *syncRun, error) {
	ectx, cancel := context.WithTimeout(traces.CarrySpan(s.bgCtx, ctx), s.cfg.ExecutionDeadline)
	started := j.Created
	j.Started, j.Attempts = &started, 1
	// The evaluation reads only these, made before it starts: j itself
	// changes when it is stored.
	items, eval := evaluation.JobItems(j), evaluation.PolicyEvaluator(plan, j, s.cfg.Backends)
	evals := make(chan evaluated, 1)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		evals <- s.evaluate(ectx, items, eval)
	}()
	grace := time.NewTimer(min(fastPathGrace, s.cfg.WaitCap))
	defer grace.Stop()
	select {
	case ev := <-evals:
		defer cancel()
		done, err := s.recordFast(ctx, ectx, j, ev)
		return done, nil, err
	case <-grace.C:
	}
	s.own(j)
	if err := s.jobs.CreateJob(ctx, j); err != nil {
		cancel()
		return nil, nil, err
	}
	run := s.inBackground(func() *evaluation.ItemError {
		defer cancel()
		stopRenew := s.renewWhileRunning(ectx, cancel, j)
		ev := <-evals
		stopRenew()
		return s.conclude(s.bgCtx, ectx, j, ev)
	})
	return nil, run, nil
}

// recordFast records j, evaluated before it was stored, finished in one
// write, and returns it. ectx is the evaluation's context, derived from
// the process's lifetime: a run the shutdown stopped is not recorded, and
// the request is answered UNAVAILABLE.
func (s *Service) recordFast(ctx, ectx context.Context, j *domain.Job, ev evaluated) (*domain.Job, error) {
	var jobErr *domain.JobError
	if ev.err != nil {
		ending, e := evaluation.End(s.bgCtx, ectx, ev.err)
		switch ending {
		case evaluation.EndStopped:
			return nil, domain.Errorf(domain.Unavailable, "the server is shutting down; retry the request")
		case evaluation.EndInternal, evaluation.EndLeaseLost:
			// No lease is held before the job is stored: a canceled
			// evaluation that is not the shutdown's is an internal error.
			e = domain.ErrJobInternal
			s.log.Error("job failed", "job", j.ID, "error", ev.err.Error())
		}
		jobErr, ev.results, ev.hits = &e, nil, nil
	}
	now := s.clock.Now()
	j.Status, j.Error, j.Completed, j.Updated = domain.JobCompleted, jobErr, &now, now
	if jobErr != nil {
		j.Status = domain.JobFailed
	} else {
		j.Then = withActive(j.Then, ev.results)
	}
	if err := s.jobs.CreateFinishedJob(context.WithoutCancel(ctx), j, ev.results, ev.hits); err != nil {
		return nil, err
	}
	if j.Status == domain.JobCompleted {
		j.Results = ev.results
	}
	return j, nil
}
