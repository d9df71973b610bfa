package jobs

import (
	"context"
	"sync"
	"time"
)

// liveWork counts the evaluations this process runs for waiting clients
// (jobs with waitForCompletion, streams), so that background tasks (shadow
// evaluations) can start in the gaps between them instead of beside them:
// on a few cores, a shadow evaluation running beside a synchronous job
// shows in that job's latency.
type liveWork struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func newLiveWork() *liveWork {
	w := &liveWork{idle: make(chan struct{})}
	close(w.idle)
	return w
}

func (w *liveWork) begin() {
	w.mu.Lock()
	if w.n == 0 {
		w.idle = make(chan struct{})
	}
	w.n++
	w.mu.Unlock()
}

func (w *liveWork) end() {
	w.mu.Lock()
	w.n--
	if w.n == 0 {
		close(w.idle)
	}
	w.mu.Unlock()
}

// wait returns once no live evaluation runs, after at most patience (so
// that background work still progresses under constant load), or when ctx
// ends.
func (w *liveWork) wait(ctx context.Context, patience time.Duration) {
	w.mu.Lock()
	idle := w.idle
	w.mu.Unlock()
	select {
	case <-idle:
		return
	default:
	}
	t := time.NewTimer(patience)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}
