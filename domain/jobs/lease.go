package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// The two background loops jobs and batches share: keeping a lease while
// its holder works, and polling a queue for work.

// keepLease renews a lease every third of its length until stopped or ctx
// ends. A renewal that reports ABORTED (another holder has it, or it was
// canceled) cancels the holder's work through cancel; other renewal errors
// are retried at the next tick, as the lease still has two thirds to run.
func KeepLease(ctx context.Context, cancel context.CancelFunc, lease time.Duration, renew func(context.Context) error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if domain.ErrorCode(renew(ctx)) == domain.Aborted {
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// pollLoop calls claim until ctx ends. When claim reports that there may be
// more work it can take at once, it is called again straight away;
// otherwise the loop waits for the poll interval, a wake-up (new work was
// queued in this process) or a freed slot, whichever comes first.
func PollLoop(ctx context.Context, every time.Duration, wake, freed <-chan struct{}, claim func() (more bool)) {
	for ctx.Err() == nil {
		if claim() {
			continue
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-freed:
		case <-t.C:
		}
		t.Stop()
	}
}
