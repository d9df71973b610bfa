package jobs

import (
	"sync/atomic"
	"time"
)

// WorkerStats counts what this process's queue workers did. The counters
// only grow; a metrics exporter reads them.
type WorkerStats struct {
	// Claimed is the jobs the workers claimed, Finished the claimed jobs
	// whose run returned (completed, failed or handed back).
	Claimed, Finished atomic.Int64
	// lastPass is when the claim loop last went round (clock Unix
	// nanoseconds); 0 before RunWorkers.
	lastPass atomic.Int64
}

// LastPass is when the claim loop last went round, by the service's clock;
// the zero time when RunWorkers is not running yet. A loop that stops
// going round (a claim stuck in the database, say) leaves it behind.
func (st *WorkerStats) LastPass() time.Time {
	n := st.lastPass.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (st *WorkerStats) pass(now time.Time) { st.lastPass.Store(now.UnixNano()) }

// WorkerStats is the counters of this process's queue workers.
func (s *Service) WorkerStats() *WorkerStats { return &s.stats }

// StallLimit is how long the claim loop may go without a round before the
// worker counts as stuck: ten idle polls, and never less than a lease,
// since a claim slower than a lease has lost its jobs anyway.
func (s *Service) StallLimit() time.Duration {
	return max(10*s.cfg.PollInterval, s.cfg.Lease)
}
