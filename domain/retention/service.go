package retention

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
)

// Config sets what is kept and how the sweep runs. Zero fields take the
// defaults below, except Retention, where 0 keeps the history forever.
type Config struct {
	// Retention is the server's retention of evaluation history; an
	// account may set a shorter one.
	Retention time.Duration
	// Interval is the time from one sweep's end to the next one's start.
	Interval time.Duration
	// WebhookRetention is how long delivered webhook events are kept.
	WebhookRetention time.Duration
	// BatchSize bounds the jobs (or batches, or webhook events) of one
	// step, a transaction of its own.
	BatchSize int
	// Lease is how long a sweeper holds the sweep without renewing it.
	Lease time.Duration
	// DaysAhead is how many days ahead day partitions are created.
	DaysAhead int
}

// Defaults of Config.
const (
	DefaultRetention        = 30 * 24 * time.Hour
	DefaultInterval         = time.Hour
	DefaultWebhookRetention = 7 * 24 * time.Hour
	DefaultBatchSize        = 500
	DefaultLease            = time.Minute
	DefaultDaysAhead        = 2
)

// AccountLister is the account store's listing.
type AccountLister interface {
	ListAccounts(ctx context.Context) ([]*domain.Account, error)
}

// ReviewContent is the review store's deletion of retained content.
type ReviewContent interface {
	ExpireReviewContent(ctx context.Context, now time.Time) (int64, error)
}

// Deps are the ports of the service.
type Deps struct {
	Store    domain.RetentionStore
	Accounts AccountLister
	Blobs    domain.BlobStore
	Clock    domain.Clock
	Log      *slog.Logger
	// Owner names this process in the sweep lease.
	Owner string
	// ReviewContent, when set, deletes the retained content of review
	// items that is due (docs/review.md#retained-content).
	ReviewContent ReviewContent
	// Yield, when set, returns once live work leaves room for a step.
	Yield func(ctx context.Context)
}

// Stats are running totals since start, for the metrics.
type Stats struct {
	RowsDeleted       atomic.Int64
	PartitionsDropped atomic.Int64
	PartitionsCreated atomic.Int64
	Sweeps            atomic.Int64
	// OldestRetained is the unix time of the oldest stored job's UTC day;
	// 0 when no job is stored (or no sweep has run yet).
	OldestRetained atomic.Int64
}

// Service runs the sweeps.
type Service struct {
	cfg   Config
	deps  Deps
	stats Stats
}

// NewService returns the service with cfg's zero fields defaulted.
func NewService(deps Deps, cfg Config) *Service {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.WebhookRetention <= 0 {
		cfg.WebhookRetention = DefaultWebhookRetention
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.DaysAhead <= 0 {
		cfg.DaysAhead = DefaultDaysAhead
	}
	if deps.Clock == nil {
		deps.Clock = domain.SystemClock{}
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Yield == nil {
		deps.Yield = func(context.Context) {}
	}
	return &Service{cfg: cfg, deps: deps}
}

// Stats returns the running totals.
func (s *Service) Stats() *Stats { return &s.stats }

// Config returns the configuration in force (defaults applied).
func (s *Service) Config() Config { return s.cfg }

// Effective is an account's retention under the server's: the account's
// when it is set and shorter (or the server keeps everything), else the
// server's; 0 keeps everything.
func Effective(server, account time.Duration) time.Duration {
	if account > 0 && (server <= 0 || account < server) {
		return account
	}
	return server
}

// Run sweeps every Interval until ctx ends, whenever this process gets the
// sweep lease. It looks for the lease at least every minute, so a sweeper
// that died is replaced within a lease and a minute.
func (s *Service) Run(ctx context.Context) {
	poll := min(s.cfg.Interval, time.Minute)
	for ctx.Err() == nil {
		if _, _, err := s.SweepIfDue(ctx); err != nil && ctx.Err() == nil {
			s.deps.Log.Error("retention sweep failed; the next one retries", "error", err.Error())
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// SweepIfDue sweeps when this process gets the lease (no other replica
// holds it and the next sweep is due), and makes the next one due an
// Interval after it ends. ran is false when it did not get the lease.
func (s *Service) SweepIfDue(ctx context.Context) (rep Report, ran bool, err error) {
	claimed, err := s.deps.Store.ClaimSweep(ctx, s.deps.Owner, s.deps.Clock.Now(), s.cfg.Lease)
	if err != nil || !claimed {
		return rep, false, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := jobs.KeepLease(sctx, cancel, s.cfg.Lease, func(ctx context.Context) error {
		return s.deps.Store.RenewSweep(ctx, s.deps.Owner, s.deps.Clock.Now(), s.cfg.Lease)
	})
	rep, err = s.Sweep(sctx)
	stop()
	if err != nil {
		// The lease runs out on its own and another sweep takes over.
		return rep, true, err
	}
	s.deps.Log.Info("retention sweep", "rowsDeleted", rep.RowsDeleted, "partitionsDropped", rep.PartitionsDropped,
		"partitionsCreated", rep.PartitionsCreated, "blobsDeleted", rep.BlobsDeleted)
	return rep, true, s.deps.Store.FinishSweep(ctx, s.deps.Owner, s.deps.Clock.Now().Add(s.cfg.Interval))
}
