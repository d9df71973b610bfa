// Package batches is the batch-job aggregate: creating batches, receiving
// and serving their files through signed links, parsing the input (CSV and
// JSONL), and the workers that move a batch through its states, submitting
// its items as queued jobs. The entities, states and store port are the
// kernel's (domain).
package batches
