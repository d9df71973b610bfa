package persistence

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/lib/pq"
)

// groupCommit coalesces concurrent writes into shared statements. At most
// slots statements are in flight; a write that arrives while they all are
// waits, and the next statement carries it together with every other write
// that queued meanwhile (up to maxBatch). A group costs one round trip, one
// commit and one WAL flush instead of one each per write.
//
// Why: on the jobs load test every synchronous job committed on its own,
// about one fdatasync of PostgreSQL's WAL per job, each one a round trip,
// a commit record and a wakeup of three processes. Grouped, the peak rose
// from ~2,500 to ~4,400-5,500 jobs a second on the 2-core test machine and
// the CPU per job at half that rate fell by half (bench/results/jobs.md).
//
// There is no background goroutine: the caller that takes a free slot
// leads (it writes its own and the queued writes); when it is done it hands
// the slot to the oldest queued write, whose caller leads the next group,
// and signals the others their outcome. Only a group that would start less
// than spacing after the last one waits, so an idle server adds no latency.
type groupCommit[W any] struct {
	// exec writes the batch atomically: all of it or none.
	exec func(ctx context.Context, batch []W) error
	// slots bounds the statements in flight; maxBatch the writes in one.
	// burstSlots (at least slots) is the bound while a backlog of more than
	// a group waits, as after a stall of the database: the backlog then
	// drains through several statements at once instead of one by one.
	slots, burstSlots, maxBatch int
	// timeout bounds one statement. A group runs for several callers, so
	// it runs on none of their contexts.
	timeout time.Duration
	// spacing is the least time between the starts of two groups: a leader
	// that comes sooner waits out the rest, and the writes that arrive
	// meanwhile join its group. Under load this bounds the statements (and
	// commits, and WAL flushes) to one per spacing, so that a moderate load
	// is grouped too, not only one that already keeps every slot busy. A
	// write after a quiet spell does not wait.
	spacing time.Duration
	// sleep waits out the spacing: time.Sleep, or a test's.
	sleep func(time.Duration)
	// attempts bounds the runs of a statement that lost to a concurrent
	// transaction (execRetrying); 0 means groupAttempts.
	attempts int

	mu        sync.Mutex
	inFlight  int
	queue     []*groupWrite[W]
	lastStart time.Time
}

// groupWrite is one caller's write and the channel of its outcome.
type groupWrite[W any] struct {
	w    W
	done chan groupOutcome // buffered: a signal never blocks the leader
}

// groupOutcome is the error of a write, or the order to lead the next group.
type groupOutcome struct {
	err  error
	lead bool
}

// write stores w alone or in a group and returns its own outcome. A write
// whose ctx ends while it is still queued is dropped (ctx's error is
// returned, nothing is written); once a group has taken it, it is written
// and write waits for that outcome whatever ctx does.
func (g *groupCommit[W]) write(ctx context.Context, w W) error {
	me := &groupWrite[W]{w: w, done: make(chan groupOutcome, 1)}
	g.mu.Lock()
	if g.mayStart() {
		g.inFlight++
		g.mu.Unlock()
		return g.lead(ctx, me)
	}
	g.queue = append(g.queue, me)
	g.mu.Unlock()
	var o groupOutcome
	select {
	case o = <-me.done:
	case <-ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, me); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			return TranslateError(ctx.Err())
		}
		g.mu.Unlock()
		o = <-me.done // taken by a group (or handed the lead) already
	}
	if o.lead {
		return g.lead(ctx, me)
	}
	return o.err
}

// lead writes me and the writes queued behind it as one group, hands the
// slot on and signals the group's other writes.
func (g *groupCommit[W]) lead(ctx context.Context, me *groupWrite[W]) error {
	g.mu.Lock()
	if wait := g.spacing - time.Since(g.lastStart); wait > 0 && len(g.queue) < g.maxBatch-1 {
		g.mu.Unlock()
		g.sleep(wait)
		g.mu.Lock()
	}
	g.lastStart = time.Now()
	n := min(len(g.queue), g.maxBatch-1)
	batch := make([]*groupWrite[W], 0, n+1)
	batch = append(append(batch, me), g.queue[:n]...)
	g.queue = g.dequeue(n)
	g.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	errs := g.run(ctx, batch)
	cancel()

	// The next group starts before this one's callers are woken; with a
	// backlog, more than one.
	g.mu.Lock()
	g.inFlight--
	for len(g.queue) > 0 && g.mayStart() {
		next := g.queue[0]
		g.queue = g.dequeue(1)
		g.inFlight++
		next.done <- groupOutcome{lead: true}
	}
	g.mu.Unlock()
	for i, b := range batch[1:] {
		b.done <- groupOutcome{err: errs[i+1]}
	}
	return errs[0]
}

// mayStart reports whether another statement may start now: a slot is free,
// or a burst slot is and more writes wait than the next group would take
// (a backlog). Called with mu held.
func (g *groupCommit[W]) mayStart() bool {
	return g.inFlight < g.slots || g.inFlight < g.burstSlots && len(g.queue) >= g.maxBatch
}

// dequeue drops the first n queued writes, clearing their slots so that the
// backing array does not keep them alive. Called with mu held.
func (g *groupCommit[W]) dequeue(n int) []*groupWrite[W] {
	clear(g.queue[:n])
	return g.queue[n:]
}

// run writes batch and returns one error per write. When the group's
// statement fails on the server (it rolled back, nothing was written), each
// write is tried on its own, so that one bad write (a duplicate id, an
// unknown account) fails alone and with its own error. Any other failure
// (connection lost, timeout) is everyone's: whether the statement committed
// is unknown, so it is not retried.
func (g *groupCommit[W]) run(ctx context.Context, batch []*groupWrite[W]) []error {
	ws := make([]W, len(batch))
	for i, b := range batch {
		ws[i] = b.w
	}
	errs := make([]error, len(batch))
	err := g.execRetrying(ctx, ws)
	var pqErr *pq.Error
	if err == nil || len(batch) == 1 || !errors.As(err, &pqErr) {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for i, w := range ws {
		errs[i] = g.execRetrying(ctx, []W{w})
	}
	return errs
}

// groupAttempts bounds how often a statement that lost to a concurrent
// transaction (a deadlock or a serialization failure) is run.
const groupAttempts = 3

// execRetrying is safeExec run again while the server rolled the statement
// back because of a concurrent transaction: that failure is nobody's
// fault, nothing was written, and the next attempt is likely to pass.
// Without the retry every caller of the group would get ABORTED, though
// none of them asked for a transaction it could retry.
func (g *groupCommit[W]) execRetrying(ctx context.Context, ws []W) error {
	attempts := cmp.Or(g.attempts, groupAttempts)
	err := g.safeExec(ctx, ws)
	for attempt := 1; attempt < attempts && lostToConcurrency(err) && ctx.Err() == nil; attempt++ {
		err = g.safeExec(ctx, ws)
	}
	return err
}

// lostToConcurrency reports whether err is PostgreSQL's
// serialization_failure or deadlock_detected.
func lostToConcurrency(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "40001" || pqErr.Code == "40P01")
}

// safeExec is exec with a panic turned into an error: the leader must
// hand its slot on and answer the group's other callers whatever happens,
// or every later write would wait forever.
func (g *groupCommit[W]) safeExec(ctx context.Context, ws []W) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("persistence: group write panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return g.exec(ctx, ws)
}
