package jobs

import (
	"context"
	"errors"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// fastPathMaxText bounds the text of a synchronous job that takes the fast
// path: small enough to evaluate in milliseconds.
const fastPathMaxText = 64 << 10

// fastPath reports whether a synchronous job may be evaluated before it is
// stored and then recorded finished in one write, instead of being stored
// running, evaluated under a lease and finished (two writes): small text-only
// jobs of accounts without a daily quota (charging needs the stored job).
// The trade: such a job is recorded only once it is done, so a crash during
// its few milliseconds of evaluation leaves no record; the client, whose
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

// runFast evaluates j in the request and records it finished (see fastPath).
// The evaluation runs under the process's lifetime, not the request's, so a
// client that goes away does not leave the job half done.
func (s *Service) runFast(ctx context.Context, j *domain.Job, plan *rules.Plan) (*domain.Job, error) {
	ectx, cancel := context.WithTimeout(s.bgCtx, s.cfg.ExecutionDeadline)
	defer cancel()
	started := j.Created
	j.Started, j.Attempts = &started, 1
	eval := PlanEvaluator(plan, j, s.cfg.Backends)
	var results []*domain.JobResult
	var hits []*domain.LabelHit
	var jobErr *domain.JobError
	seq := 0
	for i := range j.Input {
		r, h, err := s.runner.Run(ectx, JobItem(j, i), eval, &seq)
		if err != nil {
			if s.bgCtx.Err() != nil {
				return nil, domain.Errorf(domain.Unavailable, "the server is shutting down; retry the request")
			}
			e := domain.ErrJobInternal
			if ie, ok := AsItemError(err); ok {
				e = ie.Job
			} else if errors.Is(ectx.Err(), context.DeadlineExceeded) {
				e = domain.ErrJobDeadline
			} else {
				s.log.Error("job failed", "job", j.ID, "error", err.Error())
			}
			jobErr, results, hits = &e, nil, nil
			break
		}
		results = append(results, r)
		hits = append(hits, h...)
	}
	now := s.clock.Now()
	j.Status, j.Error, j.Completed, j.Updated = domain.JobCompleted, jobErr, &now, now
	if jobErr != nil {
		j.Status = domain.JobFailed
	} else {
		j.Then = withActive(j.Then, results)
	}
	if err := s.jobs.CreateFinishedJob(context.WithoutCancel(ctx), j, results, hits); err != nil {
		return nil, err
	}
	if j.Status == domain.JobCompleted {
		j.Results = results
	}
	return j, nil
}
