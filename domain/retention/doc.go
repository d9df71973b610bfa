// Package retention expires evaluation history (docs/operations.md,
// "Retention"): jobs with their results, hits, feedback and shadow rows,
// finished batches with their blobs, and delivered webhook events. It never
// touches pending or running work, dataset examples, policies, labels or
// their versions.
//
// A sweep runs on one replica at a time, under a lease kept in the
// database (domain.RetentionStore.ClaimSweep), every Config.Interval. Each
// step is one short transaction of at most Config.BatchSize jobs, and the
// sweep yields to live work between steps, so it never holds a lock a live
// request waits on for long. Where the store partitions history by day
// (PostgreSQL), whole days past the server's retention are dropped and
// later days' partitions created ahead of time; what remains (an account's
// shorter retention, a day that still held live work, rows of the default
// partition, SQLite) is deleted in batches.
package retention
