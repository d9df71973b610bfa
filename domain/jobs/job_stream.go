package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/contenteval/contenteval/domain"
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
	j, plan, err := s.prepare(ctx, account, req)
	if err != nil {
		return nil, err
	}
	s.own(j)
	if err := s.jobs.CreateJob(ctx, j); err != nil {
		return nil, err
	}
	jobErr, left, err := s.begin(ctx, j, account, false)
	if err != nil {
		s.finish(j, domain.JobFailed, &domain.ErrJobInternal, nil, nil)
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
// error is returned. An entry that cannot be evaluated (image, video, audio
// in this build) gets an error item, and the job is recorded failed with
// JOB_ERROR_REASON_JOB_FAILED after the other entries are streamed.
func (st *Stream) Run(ctx context.Context, emit func(StreamItem) error) error {
	s, j := st.s, st.Job
	s.live.begin()
	defer s.live.end()
	ectx, cancel := context.WithTimeout(ctx, st.left)
	defer cancel()
	stopShutdown := context.AfterFunc(s.bgCtx, cancel)
	defer stopShutdown()
	stopRenew := s.renewWhileRunning(ectx, cancel, j)
	defer stopRenew()

	var results []*domain.JobResult
	var hits []*domain.LabelHit
	var jobErr *domain.JobError
	seq := 0
	eval := PlanEvaluator(st.plan, j, s.cfg.Backends)
	for i, it := range j.Input {
		if e := unavailableContent([]domain.ContentItem{it}, s.cfg.Images != nil, s.cfg.Media != nil); e != nil {
			jobErr = e
			if err := emit(StreamItem{Index: i, Err: domain.Errorf(domain.Unimplemented, "%s", e.Message)}); err != nil {
				s.finish(j, domain.JobCanceled, nil, nil, nil)
				return err
			}
			continue
		}
		r, h, err := s.runner.Run(ectx, JobItem(j, i), eval, &seq)
		if ie, ok := AsItemError(err); ok {
			// The entry's error line carries the precheck body (code 1), the
			// fetch error, the media failure, or the item's overrun budget;
			// the other entries still stream.
			jobErr = &ie.Job
			if err := emit(StreamItem{Index: i, Err: ie.StreamError()}); err != nil {
				s.finish(j, domain.JobCanceled, nil, nil, nil)
				return err
			}
			continue
		}
		if err != nil {
			switch {
			case ctx.Err() != nil || s.bgCtx.Err() != nil:
				s.finish(j, domain.JobCanceled, nil, nil, nil)
				return err
			case errors.Is(ectx.Err(), context.DeadlineExceeded):
				s.finish(j, domain.JobFailed, &domain.ErrJobDeadline, nil, nil)
				_ = emit(StreamItem{Index: i, Err: domain.Errorf(domain.DeadlineExceeded, "%s", domain.ErrJobDeadline.Message)})
				return err
			default:
				s.log.Error("stream job failed", "job", j.ID, "error", err.Error())
				s.finish(j, domain.JobFailed, &domain.ErrJobInternal, nil, nil)
				_ = emit(StreamItem{Index: i, Err: domain.Errorf(domain.Internal, "%s", domain.ErrJobInternal.Message)})
				return err
			}
		}
		results = append(results, r)
		hits = append(hits, h...)
		if err := emit(StreamItem{Index: i, Result: r}); err != nil {
			s.finish(j, domain.JobCanceled, nil, nil, nil)
			return err
		}
	}
	if jobErr != nil {
		s.finish(j, domain.JobFailed, jobErr, results, hits)
		return nil
	}
	s.finish(j, domain.JobCompleted, nil, results, hits)
	return nil
}
