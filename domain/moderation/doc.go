// Package moderation answers OpenAI's Moderation API with the account's
// own rules (docs/api.md#openai-compatible-moderation): it resolves the
// request's model to a policy or to label versions, submits the inputs
// through the job service (policy-first) or the label evaluation service
// (label-first), exactly as POST /v1/jobs and POST /v1/labels/evaluate do,
// and folds the reports into OpenAI's categories and scores. It evaluates
// nothing itself.
package moderation
