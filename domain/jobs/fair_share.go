package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// fairShare decides, between two items of a running job, whether its
// worker should hand itself over to another account. A claim shares the
// free workers fairly, but only the free ones: jobs claimed while nobody
// else waited would otherwise keep every worker until they end, however
// long that is, while a newcomer's one-item job waits behind them.
//
// The queue's load is read at most once per interval (and again after
// each claim of this process or new work queued by it), under a mutex, so
// that the workers of a process share one read and hand over one worker at
// a time: after a hand-over no other worker yields until the freed slot
// has been claimed, or every worker would yield to the same waiting job.
type fairShare struct {
	store      domain.JobStore
	owner      string
	clock      domain.Clock
	every      time.Duration
	accountMax int
	// freeSlots is how many of this process's workers are idle: they claim
	// the waiting work themselves, with no hand-over needed.
	freeSlots func() int
	log       *slog.Logger

	mu      sync.Mutex
	loads   []domain.AccountLoad
	readAt  time.Time
	stale   bool
	handing bool // a worker yielded and its slot is not claimed yet
}

// markStale makes the next check read the load again: the queue changed
// in a way this process knows of.
func (f *fairShare) markStale() {
	f.mu.Lock()
	f.stale = true
	f.mu.Unlock()
}

// beforeClaim is called before each claim of this process; it reports
// whether a hand-over was under way, for claimed.
func (f *fairShare) beforeClaim() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handing
}

// claimed records a claim of this process: the load changed, and the slot
// of a hand-over under way when the claim began (handedOver) is taken,
// whether or not this claim got the waiting account's job (another
// process may have).
func (f *fairShare) claimed(handedOver bool) {
	f.mu.Lock()
	f.stale = true
	if handedOver {
		f.handing = false
	}
	f.mu.Unlock()
}

// shouldYield reports whether a worker running a job of account should
// give it back to the queue now. A store error answers no: the job goes on.
func (f *fairShare) shouldYield(ctx context.Context, account string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handing || f.freeSlots() > 0 {
		return false
	}
	now := f.clock.Now()
	if f.stale || now.Sub(f.readAt) >= f.every {
		loads, err := f.store.QueueLoad(ctx, f.owner, now)
		if err != nil {
			if ctx.Err() == nil {
				f.log.Warn("reading the queue's load; the job goes on", "error", err.Error())
			}
			return false
		}
		f.loads, f.readAt, f.stale = loads, now, false
	}
	if !overShare(f.loads, account, f.accountMax) {
		return false
	}
	f.handing = true
	for i := range f.loads {
		if f.loads[i].AccountID == account {
			f.loads[i].Running--
			f.loads[i].Mine--
		}
	}
	return true
}

// overShare reports whether account holds more workers than its fair share
// while another account has claimable jobs: more than accountMax of this
// process's (0: no cap), or at least two more running jobs than the
// waiting account with the fewest, so that moving one worker over makes the
// shares more even (one more would only swap who leads).
func overShare(loads []domain.AccountLoad, account string, accountMax int) bool {
	var own *domain.AccountLoad
	fewest := -1 // running jobs of the least served waiting account
	for i := range loads {
		l := &loads[i]
		if l.AccountID == account {
			own = l
			continue
		}
		if l.Queued && (fewest < 0 || l.Running < fewest) {
			fewest = l.Running
		}
	}
	if own == nil || fewest < 0 {
		return false
	}
	if accountMax > 0 && own.Mine > accountMax {
		return true
	}
	return own.Running-fewest >= 2
}
