package jobs

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/rules"
)

// StreamItem is one line of a job stream: the result of entry Index, or the
// error that entry failed with.
type StreamItem struct {
	Index  int
	Result *domain.JobResult
	Err    *domain.Error
}

// Stream is a streamed job (POST /v1/jobs/stream): created and owned by
// the requesting process, evaluated entry by entry as Run is called.
type Stream struct {
	Job  *domain.Job
	s    *Service
	plan *rules.Plan
	left time.Duration
}

// StartStream validates the request and records its job, running under this
// process's lease. Validation errors come from here, before anything is
// streamed. Codes: INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION,
// RESOURCE_EXHAUSTED (daily quota; the job is recorded failed).
func (s *Service) StartStream(ctx context.Context, account *domain.Account, req Request) (*Stream, error) {
	req.Wait, req.Webhook = false, nil
	j, plan, err := s.prepare(ctx, account, req, false)
	if err != nil {
		return nil, err
	}
	s.own(j)
	if err := s.jobs.CreateJob(ctx, j); err != nil {
		return nil, err
	}
	jobErr, left, err := s.begin(ctx, j, account, false)
	if err != nil {
		e := domain.ErrJobInternal
		s.finish(j, domain.JobFailed, &e, nil, nil)
		return nil, err
	}
	if jobErr != nil {
		s.finish(j, domain.JobFailed, jobErr, nil, nil)
		if jobErr.Reason == domain.ReasonQuotaExceeded {
			return nil, domain.Errorf(domain.ResourceExhausted, "%s", jobErr.Message)
		}
		return nil, domain.Errorf(domain.DeadlineExceeded, "%s", jobErr.Message)
	}
	return &Stream{Job: j, s: s, plan: plan, left: left}, nil
}

// Run evaluates the entries in order and calls emit with each one as soon
// as it is done. When ctx ends (the client went away) or emit fails, the
// remaining entries are not evaluated and the job is recorded canceled; the
// error is returned. An entry that fails on its own (refused by the
// precheck, unfetchable, undecodable, over its budget, or that this build
// cannot evaluate) gets an error item, and the job is recorded failed with
// the entry's job error after the other entries are streamed.
func (st *Stream) Run(ctx context.Context, emit func(StreamItem) error) error {
	s, j := st.s, st.Job
	s.live.begin()
	defer s.live.end()
	// The run stops, without failing the job, when the client goes away
	// or the process shuts down.
	stopped, stop := context.WithCancel(ctx)
	defer stop()
	stopShutdown := context.AfterFunc(s.bgCtx, stop)
	defer stopShutdown()
	ectx, cancel := context.WithTimeout(stopped, st.left)
	defer cancel()
	stopRenew := s.renewWhileRunning(ectx, cancel, j)
	defer stopRenew()

	var results []*domain.JobResult
	var hits []*domain.LabelHit
	var jobErr *domain.JobError
	seq := 0
	loop := evaluation.Loop{Runner: s.runner, Eval: evaluation.PolicyEvaluator(st.plan, j, s.cfg.Backends), KeepGoing: true}
	var emitErr error
	n, err := loop.Run(ectx, evaluation.JobItems(j), &seq, func(o evaluation.Outcome) error {
		line := StreamItem{Index: o.Item.Index, Result: o.Result}
		if o.Failed != nil {
			// The entry's error line carries the precheck body (code 1), the
			// fetch error, the media failure, or the item's overrun budget;
			// the other entries still stream.
			e := o.Failed.Job
			jobErr, line.Result, line.Err = &e, nil, o.Failed.StreamError()
		} else {
			results = append(results, o.Result)
			hits = append(hits, o.Hits...)
		}
		emitErr = emit(line)
		return emitErr
	})
	switch {
	case emitErr != nil:
		s.finish(j, domain.JobCanceled, nil, nil, nil)
		return emitErr
	case err != nil:
		return st.end(stopped, ectx, n, err, emit)
	case jobErr != nil:
		s.finish(j, domain.JobFailed, jobErr, results, hits)
		return nil
	}
	s.finish(j, domain.JobCompleted, nil, results, hits)
	return nil
}

// end ends the stream's job when the evaluation of entry i returned err,
// as evaluation.End maps it: canceled when the run was stopped, failed
// otherwise, with an error line for the entry.
func (st *Stream) end(stopped, ectx context.Context, i int, err error, emit func(StreamItem) error) error {
	s, j := st.s, st.Job
	ending, jobErr := evaluation.End(stopped, ectx, err)
	line := domain.Errorf(domain.DeadlineExceeded, "%s", jobErr.Message)
	switch ending {
	case evaluation.EndStopped:
		s.finish(j, domain.JobCanceled, nil, nil, nil)
		return err
	case evaluation.EndInternal, evaluation.EndLeaseLost:
		s.log.Error("stream job failed", "job", j.ID, "error", err.Error())
		jobErr = domain.ErrJobInternal
		line = domain.Errorf(domain.Internal, "%s", jobErr.Message)
	}
	s.finish(j, domain.JobFailed, &jobErr, nil, nil)
	_ = emit(StreamItem{Index: i, Err: line})
	return err
}
