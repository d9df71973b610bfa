package jobs

import (
	"context"
	"github.com/contenteval/contenteval/domain/traces"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/rules"
)

// syncRun is a job this process runs in the background for a synchronous
// request: done is closed once it has ended, itemErr set before.
type syncRun struct {
	done    chan struct{}
	itemErr *evaluation.ItemError
}

// inBackground runs fn, under the process's lifetime, as a syncRun.
func (s *Service) inBackground(fn func() *evaluation.ItemError) *syncRun {
	run := &syncRun{done: make(chan struct{})}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(run.done)
		run.itemErr = fn()
	}()
	return run
}

// runSync runs j, not yet stored, in this process and returns it when it is
// terminal or, whatever its evaluators do, once the wait cap has passed
// since the call: then in its current state (stored, so listed), while it
// goes on in the background. Codes: those of storing the job, and of an
// item's failure that the request answers with (RequestError).
func (s *Service) runSync(ctx context.Context, account *domain.Account, j *domain.Job, plan *rules.Plan) (*domain.Job, error) {
	ctx, span := startJobSpan(ctx, "jobs.run_sync", j)
	defer span.End()
	waitCap := time.NewTimer(s.cfg.WaitCap)
	defer waitCap.Stop()
	var run *syncRun
	if s.fastPath(j, account) {
		finished, slow, err := s.runFast(ctx, j, plan)
		if err != nil || finished != nil {
			return finished, err
		}
		run = slow
	} else {
		s.own(j)
		if err := s.jobs.CreateJob(ctx, j); err != nil {
			return nil, err
		}
		bg := traces.CarrySpan(s.bgCtx, ctx)
		run = s.inBackground(func() *evaluation.ItemError { return s.execute(bg, j, account, plan) })
	}
	select {
	case <-run.done:
		if run.itemErr != nil {
			if err := run.itemErr.RequestError(); err != nil {
				return nil, err
			}
		}
		if j.Status.Terminal() { // finished by this process: j is current
			return j, nil
		}
	case <-waitCap.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Get(ctx, account, j.ID)
}

// evaluated is how a job's items ended: their results and hits, or the
// error that stopped them (an *evaluation.ItemError fails the job).
type evaluated struct {
	results []*domain.JobResult
	hits    []*domain.LabelHit
	err     error
}

// evaluate runs items in order until one fails.
func (s *Service) evaluate(ctx context.Context, items []evaluation.Item, eval evaluation.EvaluateFunc) evaluated {
	var ev evaluated
	seq := 0
	_, ev.err = evaluation.Loop{Runner: s.runner, Eval: eval}.Run(ctx, items, &seq, func(o evaluation.Outcome) error {
		ev.results = append(ev.results, o.Result)
		ev.hits = append(ev.hits, o.Hits...)
		return nil
	})
	if ev.err != nil {
		return evaluated{err: ev.err}
	}
	return ev
}

// conclude records how the evaluation of a stored job this process holds
// ended; procCtx is the process's lifetime, execCtx the evaluation's. An
// item's failure, which failed the job, is returned.
func (s *Service) conclude(procCtx, execCtx context.Context, j *domain.Job, ev evaluated) *evaluation.ItemError {
	if ev.err != nil {
		return s.end(procCtx, execCtx, j, ev.err)
	}
	s.finish(j, domain.JobCompleted, nil, ev.results, ev.hits)
	return nil
}
