// Package review serves human review (docs/review.md): queues and their
// routes, items that reviewers claim, skip, release and decide, and what a
// decision becomes (feedback, a dataset example, an audit row, a webhook).
// Routing itself happens where results are recorded, in the store.
package review
