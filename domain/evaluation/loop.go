package evaluation

import (
	"context"
	"errors"

	"github.com/contenteval/contenteval/domain"
)

// Outcome is how one item of a Loop ended: its result and hits, or, in a
// loop that keeps going, its own failure.
type Outcome struct {
	Item   Item
	Result *domain.JobResult
	Hits   []*domain.LabelHit
	Failed *ItemError
}

// Loop is the one loop over a job's items: the worker's, the synchronous
// fast path's and the stream's.
type Loop struct {
	Runner *ItemRunner
	Eval   EvaluateFunc
	// KeepGoing hands an item's own failure (an *ItemError) to the
	// loop's callback and goes on with the next item, as the stream does;
	// without it the failure ends the loop.
	KeepGoing bool
	// Yield, when set, is asked before every item but the first whether
	// the loop is to stop there (its worker is owed to another account).
	Yield func() bool
}

// Run evaluates items in order, numbering their hits from *seq on, and
// calls each with every item's outcome as soon as it has one. It returns
// how many items it ran (fewer than all when Yield stopped it), and the
// error that ended it: an *ItemError (without KeepGoing), the runner's
// (see End) or each's.
func (l Loop) Run(ctx context.Context, items []Item, seq *int, each func(Outcome) error) (int, error) {
	for n, it := range items {
		if n > 0 && l.Yield != nil && l.Yield() {
			return n, nil
		}
		r, h, err := l.Runner.Run(ctx, it, l.Eval, seq)
		o := Outcome{Item: it, Result: r, Hits: h}
		if ie, ok := AsItemError(err); ok && l.KeepGoing {
			o.Failed, err = ie, nil
		}
		if err != nil {
			return n, err
		}
		if err := each(o); err != nil {
			return n, err
		}
	}
	return len(items), nil
}

// Ending says what becomes of a job whose items' run ended with an error
// (End).
type Ending int

// The endings of a run that failed.
const (
	// EndItem: an item failed on its own; the job fails with its job error.
	EndItem Ending = iota
	// EndDeadline: the job's execution deadline passed; it fails with
	// JOB_ERROR_REASON_EXECUTION_DEADLINE_EXCEEDED.
	EndDeadline
	// EndInternal: anything else; the job fails with the generic job
	// error, and the caller logs err.
	EndInternal
	// EndStopped: the run was stopped from outside (the process shuts
	// down, a stream's client went away): not the job's failure. A queued
	// job is released, a streamed or label evaluation's job canceled, a
	// synchronous request answered UNAVAILABLE.
	EndStopped
	// EndLeaseLost: the job's lease was lost; another worker owns it now
	// and this run's outcome is dropped.
	EndLeaseLost
)

// End is the one mapping of the error that ended a run of a job's items to
// the job's end, and the job error a failed job carries (a copy: never a
// package variable). stopped is the context whose end stops the run
// without failing the job (the process's lifetime; a stream's client too),
// exec the evaluation's (the execution deadline, the lease), derived from
// it.
func End(stopped, exec context.Context, err error) (Ending, domain.JobError) {
	switch ie, ok := AsItemError(err); {
	case ok:
		return EndItem, ie.Job
	case stopped.Err() != nil:
		return EndStopped, domain.JobError{}
	case errors.Is(exec.Err(), context.DeadlineExceeded):
		return EndDeadline, domain.ErrJobDeadline
	case exec.Err() != nil:
		return EndLeaseLost, domain.JobError{}
	}
	return EndInternal, domain.ErrJobInternal
}

// Unavailable returns the job error for items this runner cannot
// evaluate (images without an image inspector, video and audio without a
// media analyzer), or nil.
func (r *ItemRunner) Unavailable(items []domain.ContentItem) *domain.JobError {
	for _, it := range items {
		switch it.Kind {
		case domain.ContentText:
		case domain.ContentImage, domain.ContentImageURL:
			if r.cfg.Images != nil {
				continue
			}
			e := domain.ErrJobNoImage
			return &e
		default:
			if r.cfg.Media != nil && domain.IsMediaKind(it.Kind) {
				continue
			}
			e := domain.ErrJobNoMedia
			return &e
		}
	}
	return nil
}
