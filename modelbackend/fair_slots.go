package modelbackend

import (
	"context"
	"sync"
)

// fairSlots is a backend's concurrency cap shared fairly between accounts:
// while slots are free anyone takes one; once they are all held, a freed
// slot goes to the waiting account that holds the fewest (oldest waiter
// first among equals). One account's burst then delays another's calls by
// at most one call's time instead of by its whole queue, and an account
// alone still gets every slot.
type fairSlots struct {
	mu      sync.Mutex
	free    int
	held    map[string]int
	waiters []*slotWaiter
}

type slotWaiter struct {
	account string
	ready   chan struct{}
}

func newFairSlots(n int) *fairSlots {
	return &fairSlots{free: n, held: map[string]int{}}
}

// acquire takes a slot for account, or returns ctx's error.
func (f *fairSlots) acquire(ctx context.Context, account string) error {
	f.mu.Lock()
	if f.free > 0 && len(f.waiters) == 0 {
		f.free--
		f.held[account]++
		f.mu.Unlock()
		return nil
	}
	w := &slotWaiter{account: account, ready: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.waiters {
			if x == w {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Granted as the context ended: hand the slot on.
		f.releaseLocked(account)
		return ctx.Err()
	}
}

// release gives back a slot account held.
func (f *fairSlots) release(account string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releaseLocked(account)
}

func (f *fairSlots) releaseLocked(account string) {
	if f.held[account]--; f.held[account] <= 0 {
		delete(f.held, account)
	}
	if len(f.waiters) == 0 {
		f.free++
		return
	}
	best := 0
	for i, w := range f.waiters {
		if f.held[w.account] < f.held[f.waiters[best].account] {
			best = i
		}
	}
	w := f.waiters[best]
	f.waiters = append(f.waiters[:best], f.waiters[best+1:]...)
	f.held[w.account]++
	close(w.ready)
}
