// Package jobs is the job aggregate: submitting jobs (synchronous, queued,
// streamed), the workers that claim and run queued ones (batch items among
// them), and the ItemRunner, the one way a content item is evaluated,
// which label evaluation uses too. The lease-keeping and poll loops here
// are shared with the batch workers. Job entities, states and the store
// port are the kernel's (domain).
package jobs
