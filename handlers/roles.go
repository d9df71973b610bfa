package handlers

import "github.com/contenteval/contenteval/domain/access"

// operationRoles is the one place REST decides which key roles may call an
// operation (docs/api.md#key-roles). Every operation of openapi.yaml outside
// the `operations` tag has an entry (a test checks it), so a new endpoint
// cannot be forgotten; one without an entry admits no key at all.
//
// api keys evaluate and read: they may create jobs, batches and feedback,
// but not change an account's labels, policies, tags or datasets.
var operationRoles = map[string]access.RoleSet{
	// Evaluation.
	"createJob":        access.EvaluateOrRead,
	"streamJobs":       access.EvaluateOrRead,
	"evaluateLabels":   access.EvaluateOrRead,
	"createModeration": access.EvaluateOrRead,
	"createBatchJob":   access.EvaluateOrRead,
	"cancelBatchJob":   access.EvaluateOrRead,
	"checkRules":       access.EvaluateOrRead,
	"createFeedback":   access.EvaluateOrRead,
	"listJobs":         access.EvaluateOrRead,
	// A reviewer key reads only the jobs its items point to (reviewerJob).
	"getJob":           access.ReadOrReview,
	"listJobLabelHits": access.ReadOrReview,
	"listFeedback":     access.EvaluateOrRead,
	"listBatchJobs":    access.EvaluateOrRead,
	// The batch input and output URLs are signed and carry no key; their
	// signature is issued to a key that may call createBatchJob.
	"uploadBatchInput":    access.Roles(),
	"downloadBatchOutput": access.Roles(),

	// Reads of the account's configuration.
	"listLabels":              access.EvaluateOrRead,
	"getLabel":                access.EvaluateOrRead,
	"listLabelVersions":       access.EvaluateOrRead,
	"getLabelVersion":         access.EvaluateOrRead,
	"getLabelVersionMetrics":  access.EvaluateOrRead,
	"listDatasetExamples":     access.EvaluateOrRead,
	"listDatasetRuns":         access.EvaluateOrRead,
	"getDatasetRun":           access.EvaluateOrRead,
	"listDatasetRunResults":   access.EvaluateOrRead,
	"compareDatasetRuns":      access.EvaluateOrRead,
	"listLabelTags":           access.EvaluateOrRead,
	"listPolicies":            access.EvaluateOrRead,
	"getPolicy":               access.EvaluateOrRead,
	"listPolicyVersions":      access.EvaluateOrRead,
	"getShadowStats":          access.EvaluateOrRead,
	"listShadowResults":       access.EvaluateOrRead,
	"getPolicyVersionMetrics": access.EvaluateOrRead,

	// Changes to the account's configuration.
	"createLabel":           access.AdminOnly,
	"updateLabel":           access.AdminOnly,
	"deleteLabel":           access.AdminOnly,
	"archiveLabel":          access.AdminOnly,
	"unarchiveLabel":        access.AdminOnly,
	"setLabelTags":          access.AdminOnly,
	"createLabelVersion":    access.AdminOnly,
	"createDatasetExamples": access.AdminOnly,
	"deleteDatasetExample":  access.AdminOnly,
	"createDatasetRun":      access.AdminOnly,
	"createLabelTag":        access.AdminOnly,
	"createPolicy":          access.AdminOnly,
	"createPolicyVersion":   access.AdminOnly,
	"activatePolicyVersion": access.AdminOnly,

	// Human review: queue administration for admin keys; the queues' reads
	// and the review work for reviewer and admin keys.
	"createReviewQueue":   access.AdminOnly,
	"updateReviewQueue":   access.AdminOnly,
	"deleteReviewQueue":   access.AdminOnly,
	"listReviewQueues":    access.Review,
	"getReviewQueue":      access.Review,
	"getReviewQueueStats": access.Review,
	"listReviewItems":     access.Review,
	"getReviewItem":       access.Review,
	"claimReviewItem":     access.Review,
	"renewReviewClaim":    access.Review,
	"releaseReviewItem":   access.Review,
	"skipReviewItem":      access.Review,
	"decideReviewItem":    access.Review,

	// Hash lists: reads too, since a list's hashes are what it blocks.
	"listHashLists":       access.AdminOnly,
	"createHashList":      access.AdminOnly,
	"getHashList":         access.AdminOnly,
	"updateHashList":      access.AdminOnly,
	"deleteHashList":      access.AdminOnly,
	"listHashListHashes":  access.AdminOnly,
	"addHashListHashes":   access.AdminOnly,
	"importHashList":      access.AdminOnly,
	"deleteHashListHash":  access.AdminOnly,
	"disableHashListHash": access.AdminOnly,
	"enableHashListHash":  access.AdminOnly,
	"confirmHashListHash": access.AdminOnly,
}
