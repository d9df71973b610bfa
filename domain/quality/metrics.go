package quality

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// checkRange validates a since/until pair.
func checkRange(since, until *time.Time) error {
	if since != nil && until != nil && !since.Before(*until) {
		return domain.InvalidField("until", "must be after since")
	}
	return nil
}

// LabelVersionMetrics returns the live metrics of a label version: from
// the label evaluations made with it (created in [since, until)) and their
// feedback, one row for the label. Codes: NOT_FOUND (label, version),
// INVALID_ARGUMENT (until not after since).
func (s *Service) LabelVersionMetrics(ctx context.Context, account *domain.Account, labelID, versionID string, since, until *time.Time) ([]*domain.VersionMetric, error) {
	if err := checkRange(since, until); err != nil {
		return nil, err
	}
	l, err := s.d.Labels.GetLabel(ctx, account.ID, labelID)
	if err != nil {
		return nil, domain.DescribeNotFound(err, "label %q not found", labelID)
	}
	v, err := s.d.Versions.GetLabelVersion(ctx, account.ID, labelID, versionID)
	if err != nil {
		return nil, domain.DescribeNotFound(err, "label version %q of label %q not found", versionID, labelID)
	}
	return s.d.Metrics.VersionMetrics(ctx, domain.MetricsQuery{AccountID: account.ID, LabelVersionID: v.ID,
		Since: since, Until: until, Labels: []string{l.Name}})
}

// PolicyVersionMetrics returns the live metrics of a policy version, one
// row per label: from the jobs evaluated with it while it was active and
// from its shadow evaluations of live jobs (created in [since, until)),
// against the feedback on those jobs. Codes: NOT_FOUND (policy, version),
// INVALID_ARGUMENT (until not after since).
func (s *Service) PolicyVersionMetrics(ctx context.Context, account *domain.Account, policyID, versionID string, since, until *time.Time) ([]*domain.VersionMetric, error) {
	if err := checkRange(since, until); err != nil {
		return nil, err
	}
	if _, err := s.d.Policies.Get(ctx, account, policyID); err != nil {
		return nil, domain.DescribeNotFound(err, "policy %q not found", policyID)
	}
	v, plan, err := s.d.Policies.Plan(ctx, policyID, versionID)
	if err != nil {
		return nil, domain.DescribeNotFound(err, "policy version %q of policy %q not found", versionID, policyID)
	}
	return s.d.Metrics.VersionMetrics(ctx, domain.MetricsQuery{AccountID: account.ID, PolicyVersionID: v.ID,
		Since: since, Until: until, Labels: plan.Labels()})
}
