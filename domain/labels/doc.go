// Package labels is the label-first aggregate: labels, their tags and
// versions (Service), and evaluating content against label versions, the
// label hits of jobs and reviewers' feedback (EvaluationService). The
// entities and store ports are the kernel's (domain); content is evaluated
// through domain/evaluation, like every job.
package labels
