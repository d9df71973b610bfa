// Package jobs is the job aggregate: submitting jobs (synchronous, queued,
// streamed), and the workers that claim and run queued ones (batch items
// among them). Their items are evaluated through domain/evaluation, the
// one place an item is evaluated. The lease-keeping and poll loops here
// are shared with the batch workers. Job entities, states and the store
// port are the kernel's (domain).
package jobs
