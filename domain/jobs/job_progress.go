package jobs

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
)

// The items of a claimed job, evaluated in order, and the hand-over of
// its worker to another account between two of them.

// evaluateItems evaluates j's items to the job's end (see execute), from
// the first one a former claim did not finish. A queued job (mayYield)
// checks the fair share before each item after its first in this claim
// (every claim makes progress) and gives its worker up when another
// account is owed it, storing the results it has.
func (s *Service) evaluateItems(procCtx, ctx context.Context, j *domain.Job, eval evaluation.EvaluateFunc, mayYield bool) *evaluation.ItemError {
	results, seq, err := s.progress(ctx, j)
	if err != nil {
		return s.end(procCtx, ctx, j, err)
	}
	stored := len(results)
	var hits []*domain.LabelHit
	loop := evaluation.Loop{Runner: s.runner, Eval: eval}
	if mayYield {
		// Not right after results were stored: that claim made progress.
		loop.Yield = func() bool { return len(results) > stored && s.ShouldYield(ctx, j) }
	}
	_, err = loop.Run(ctx, evaluation.JobItems(j)[stored:], &seq, func(o evaluation.Outcome) error {
		results = append(results, o.Result)
		hits = append(hits, o.Hits...)
		ok, err := s.storeAsItGoes(ctx, j, results[stored:], hits)
		if ok {
			stored, hits = len(results), nil
		}
		return err
	})
	switch {
	case err != nil:
		return s.end(procCtx, ctx, j, err)
	case len(results) < len(j.Input):
		s.yield(j, results[stored:], hits)
		return nil
	}
	s.finishAfter(j, domain.JobCompleted, nil, results, stored, hits)
	return nil
}

// progress returns the results j stored when it yielded its worker, and
// the Seq of its next label hit. A job that never yielded has none, and
// costs no read.
func (s *Service) progress(ctx context.Context, j *domain.Job) ([]*domain.JobResult, int, error) {
	if j.Yields == 0 {
		return nil, 0, nil
	}
	results, seq, err := s.jobs.JobProgress(ctx, j.ID)
	if err != nil || len(results) > len(j.Input) {
		return nil, 0, err
	}
	for i, r := range results {
		if r.Index != i { // not a prefix: start over rather than guess
			return nil, 0, domain.Errorf(domain.Internal, "job %q stored result %d at position %d", j.ID, r.Index, i)
		}
	}
	return results, seq, nil
}

// ShouldYield reports whether the worker running j, a job it claimed from
// the queue, should give it back now (see fairShare); a task asks between
// two of its items. Outside the workers (no RunWorkers) it is always false.
func (s *Service) ShouldYield(ctx context.Context, j *domain.Job) bool {
	f := s.fair.Load()
	return f != nil && f.shouldYield(ctx, j.AccountID)
}

// yield gives j back to the queue with the outcome of its items finished
// in this claim. When that fails, j keeps its lease until it expires and
// is claimed again then.
func (s *Service) yield(j *domain.Job, results []*domain.JobResult, hits []*domain.LabelHit) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.jobs.YieldJob(ctx, j.ID, j.LeaseOwner, s.clock.Now(), results, hits)
	if err != nil && domain.ErrorCode(err) != domain.Aborted {
		s.log.Warn("yielding a job to another account; it will be retried after its lease expires", "job", j.ID, "error", err.Error())
	}
}
