package retention

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// Report is what one sweep did.
type Report struct {
	RowsDeleted       int64
	PartitionsDropped int
	PartitionsCreated int
	BlobsDeleted      int
	// ReviewContentDeleted counts the review items whose retained content
	// was deleted (its time came, or its job is gone).
	ReviewContentDeleted int64
	// OldestRetained is the oldest stored job's creation; nil for none.
	OldestRetained *time.Time
}

// EnsurePartitions makes the day partitions a sweep makes, and nothing
// else. A server calls it before it listens: making today's or tomorrow's
// takes the history tables' exclusive lock, which requests would queue
// behind.
func (s *Service) EnsurePartitions(ctx context.Context) (int, error) {
	now := s.deps.Clock.Now()
	created, err := s.deps.Store.EnsurePartitions(ctx, now, now.AddDate(0, 0, s.cfg.DaysAhead))
	s.stats.PartitionsCreated.Add(int64(created.Created))
	return created.Created, err
}

// Sweep runs one sweep now, without the lease: the caller makes sure it
// is the only one (SweepIfDue does).
func (s *Service) Sweep(ctx context.Context) (Report, error) {
	var rep Report
	now := s.deps.Clock.Now()
	created, err := s.deps.Store.EnsurePartitions(ctx, now, now.AddDate(0, 0, s.cfg.DaysAhead))
	if err != nil {
		return rep, err
	}
	rep.PartitionsCreated = created.Created
	var jobsBefore time.Time
	if s.cfg.Retention > 0 {
		jobsBefore = now.Add(-s.cfg.Retention)
	}
	dropped, err := s.deps.Store.DropPartitions(ctx, jobsBefore, now.Add(-s.cfg.WebhookRetention))
	if err != nil {
		return rep, err
	}
	rep.PartitionsDropped, rep.RowsDeleted = dropped.Dropped, dropped.Rows
	accounts, err := s.deps.Accounts.ListAccounts(ctx)
	if err != nil {
		return rep, err
	}
	for _, a := range accounts {
		keep := Effective(s.cfg.Retention, a.Retention)
		if keep <= 0 {
			continue
		}
		if err := s.expireAccount(ctx, a.ID, now.Add(-keep), &rep); err != nil {
			return rep, err
		}
	}
	if err := s.expireWebhooks(ctx, now.Add(-s.cfg.WebhookRetention), &rep); err != nil {
		return rep, err
	}
	// After the jobs: the content of an item whose job was just deleted
	// goes in the same sweep.
	if s.deps.ReviewContent != nil {
		if rep.ReviewContentDeleted, err = s.deps.ReviewContent.ExpireReviewContent(ctx, now); err != nil {
			return rep, err
		}
	}
	if err := s.deps.Store.Compact(ctx); err != nil {
		return rep, err
	}
	if rep.OldestRetained, err = s.oldestRetained(ctx, accounts); err != nil {
		return rep, err
	}
	s.record(rep)
	return rep, nil
}

// record adds rep to the running totals.
func (s *Service) record(rep Report) {
	s.stats.Sweeps.Add(1)
	s.stats.RowsDeleted.Add(rep.RowsDeleted)
	s.stats.PartitionsDropped.Add(int64(rep.PartitionsDropped))
	s.stats.PartitionsCreated.Add(int64(rep.PartitionsCreated))
	var oldest int64
	if rep.OldestRetained != nil {
		t := rep.OldestRetained.UTC()
		oldest = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix()
	}
	s.stats.OldestRetained.Store(oldest)
}

// expireAccount deletes the account's finished jobs, batches and hash-list
// match records created before before, a batch at a time.
func (s *Service) expireAccount(ctx context.Context, accountID string, before time.Time, rep *Report) error {
	for {
		s.deps.Yield(ctx)
		rows, n, err := s.deps.Store.ExpireJobs(ctx, accountID, before, s.cfg.BatchSize)
		if err != nil {
			return err
		}
		rep.RowsDeleted += rows
		if n < s.cfg.BatchSize {
			break
		}
	}
	if err := s.drain(ctx, rep, func(limit int) (int64, error) {
		return s.deps.Store.ExpirePrecheckMatches(ctx, accountID, before, limit)
	}); err != nil {
		return err
	}
	for {
		s.deps.Yield(ctx)
		batches, err := s.deps.Store.ExpiredBatches(ctx, accountID, before, s.cfg.BatchSize)
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(batches))
		for _, b := range batches {
			deleted, err := s.deleteBlobs(ctx, b)
			rep.BlobsDeleted += deleted
			if err != nil {
				// The row stays, so the blobs are tried again next sweep
				// rather than forgotten.
				s.deps.Log.Warn("retention: batch blobs not deleted; kept for the next sweep", "batch", b.ID, "error", err.Error())
				continue
			}
			ids = append(ids, b.ID)
		}
		rows, err := s.deps.Store.DeleteBatches(ctx, ids)
		if err != nil {
			return err
		}
		rep.RowsDeleted += rows
		if len(batches) < s.cfg.BatchSize || len(ids) == 0 {
			return nil
		}
	}
}

// deleteBlobs deletes a batch's input and output files.
func (s *Service) deleteBlobs(ctx context.Context, b domain.ExpiredBatch) (int, error) {
	deleted := 0
	for _, key := range []string{b.InputKey, b.OutputKey} {
		if key == "" || s.deps.Blobs == nil {
			continue
		}
		if err := s.deps.Blobs.Delete(ctx, key); err != nil {
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}

// expireWebhooks deletes finished webhook events created before before.
func (s *Service) expireWebhooks(ctx context.Context, before time.Time, rep *Report) error {
	return s.drain(ctx, rep, func(limit int) (int64, error) {
		return s.deps.Store.ExpireWebhookEvents(ctx, before, limit)
	})
}

// drain runs step, a deletion of up to a batch of rows, until it deletes
// fewer than a batch, adding the rows to rep.
func (s *Service) drain(ctx context.Context, rep *Report, step func(limit int) (int64, error)) error {
	for {
		s.deps.Yield(ctx)
		n, err := step(s.cfg.BatchSize)
		if err != nil {
			return err
		}
		rep.RowsDeleted += n
		if n < int64(s.cfg.BatchSize) {
			return nil
		}
	}
}

// oldestRetained is the creation of the oldest job still stored.
func (s *Service) oldestRetained(ctx context.Context, accounts []*domain.Account) (*time.Time, error) {
	var oldest *time.Time
	for _, a := range accounts {
		t, err := s.deps.Store.OldestJob(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		if t != nil && (oldest == nil || t.Before(*oldest)) {
			oldest = t
		}
	}
	return oldest, nil
}
