package domain

import (
	"context"
	"time"
)

// ExpiredBatch is a finished batch past its retention: its row and items
// go once its blobs are deleted.
type ExpiredBatch struct {
	ID        string
	InputKey  string
	OutputKey string
}

// PartitionSweep is what one pass over time partitions did.
type PartitionSweep struct {
	// Created counts the partitions made ahead of time.
	Created int
	// Dropped counts the partitions dropped whole, and Rows their rows
	// (PostgreSQL's estimate when it has one).
	Dropped int
	Rows    int64
}

// RetentionStore removes expired history in bounded steps, each its own
// short transaction, and holds the lease that lets one replica at a time
// sweep. Pending and running jobs, unfinished batches, dataset examples,
// policies, labels and their versions are never touched.
type RetentionStore interface {
	// ClaimSweep takes the sweep lease for owner until now+lease when no
	// one holds it and the next sweep is due; false when not.
	ClaimSweep(ctx context.Context, owner string, now time.Time, lease time.Duration) (bool, error)
	// RenewSweep extends owner's lease. Codes: ABORTED when owner no
	// longer holds it.
	RenewSweep(ctx context.Context, owner string, now time.Time, lease time.Duration) error
	// FinishSweep releases owner's lease and makes the next sweep due at
	// next. Codes: ABORTED when owner no longer holds it.
	FinishSweep(ctx context.Context, owner string, next time.Time) error

	// EnsurePartitions makes the time partitions of the history tables for
	// the days from..to (UTC) that do not exist yet; safe to run on several
	// replicas at once. A store without partitions does nothing.
	EnsurePartitions(ctx context.Context, from, to time.Time) (PartitionSweep, error)
	// DropPartitions drops the job history partitions of days that end at
	// or before jobsBefore and hold no pending or running job, and the
	// webhook delivery partitions of days that end at or before
	// webhooksBefore and hold no undelivered event.
	DropPartitions(ctx context.Context, jobsBefore, webhooksBefore time.Time) (PartitionSweep, error)

	// ExpireJobs deletes up to limit finished jobs of the account created
	// before before, with their results, hits, feedback and shadow rows,
	// and returns how many rows it deleted and how many jobs.
	ExpireJobs(ctx context.Context, accountID string, before time.Time, limit int) (rows int64, jobs int, err error)
	// ExpiredBatches returns up to limit finished batches of the account
	// created before before.
	ExpiredBatches(ctx context.Context, accountID string, before time.Time, limit int) ([]ExpiredBatch, error)
	// DeleteBatches deletes the batches' rows and items; the rows deleted.
	DeleteBatches(ctx context.Context, ids []string) (int64, error)
	// ExpirePrecheckMatches deletes up to limit of the account's hash-list
	// match audit records created before before; the rows deleted.
	ExpirePrecheckMatches(ctx context.Context, accountID string, before time.Time, limit int) (int64, error)
	// ExpireWebhookEvents deletes up to limit delivered (or given up)
	// webhook events created before before; the rows deleted.
	ExpireWebhookEvents(ctx context.Context, before time.Time, limit int) (int64, error)
	// Compact gives the space of deleted rows back where the database
	// does not do it on its own (SQLite's incremental vacuum), a bounded
	// number of pages at a time.
	Compact(ctx context.Context) error
	// OldestJob returns when the account's oldest stored job was created;
	// nil when it has none.
	OldestJob(ctx context.Context, accountID string) (*time.Time, error)
}
