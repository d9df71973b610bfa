// Package evaluation is the one place a content item is evaluated
// (docs/architecture.md#where-an-item-is-evaluated): the ItemRunner (an
// item's inspection, evaluation and hits within its time budget), the Loop
// over a job's items, the one mapping of the errors that end a run to the
// job errors a job ends with (JobErrorOf, End), the policy-version and
// label-version evaluators with the one cache of compiled plans, and the
// builders of an item's hits (timed hits of video and audio included).
// Jobs (queued, synchronous, streamed, and so batch items), label
// evaluation, dataset runs and shadow versions all evaluate through it; it
// knows the kernel's ports and the rule engine, nothing else.
package evaluation
