package domain

import (
	"context"
	"time"
)

// VersionMetric is the live quality of one label (section) of a label or
// policy version (docs/api.md#extension-endpoints): how often the version evaluated content and
// found the label, and how its outcomes compare with reviewers' feedback.
type VersionMetric struct {
	Label string
	// Evaluations counts the job results the version evaluated (each
	// evaluates every label of the version).
	Evaluations int
	// Positives counts those where the label was TRUE.
	Positives int
	// Annotations counts the feedback annotations on the label of those
	// results that judge the whole content TRUE or FALSE (annotations of
	// an occurrence in timed media, or without a judgement, are not
	// counted). The confusion matrix counts those whose result was TRUE or
	// FALSE (a FAILED label is in Annotations only).
	Annotations int
	Confusion
}

// MetricsQuery selects the evaluations of one version of an account:
// jobs evaluated with LabelVersionID or PolicyVersionID (and, for a policy
// version, its shadow evaluations of live jobs), created in [Since, Until)
// (nil bounds are open).
type MetricsQuery struct {
	AccountID       string
	LabelVersionID  string
	PolicyVersionID string
	Since, Until    *time.Time
	// Labels are the version's label names: each gets a row, even
	// without hits or feedback, in this order before any other.
	Labels []string
}

// QualityMetricsStore computes live metrics.
type QualityMetricsStore interface {
	// VersionMetrics returns one row per label name: q.Labels in order,
	// then the other names found in the evaluations' hits or feedback
	// (labels renamed or removed since), sorted.
	VersionMetrics(ctx context.Context, q MetricsQuery) ([]*VersionMetric, error)
}
