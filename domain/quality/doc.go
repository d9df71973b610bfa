// Package quality is the policy-quality aggregate (docs/api.md#extension-endpoints): dataset
// examples of labels and dataset runs that measure a label version against
// them, live metrics of label and policy versions from reviewers' feedback,
// and shadow versions of policies evaluated on live traffic. Every
// evaluation it makes goes through domain/evaluation's item runner, from the durable
// queue: a dataset run is queued as chunks of examples and a shadow
// evaluation as a job that follows the live one, both internal job types
// (domain.InternalJobTypes) that the job workers hand to this package's
// tasks.
package quality
