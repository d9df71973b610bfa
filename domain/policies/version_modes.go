package policies

import (
	"context"
	"strconv"

	"github.com/contenteval/contenteval/domain"
)

// Version modes (docs/api.md#extension-endpoints): a version is added active (as always), as
// the policy's shadow, or as a draft; a version is activated later.

// AddVersionAs compiles text into a new version of the policy with the role
// mode ("" is ACTIVE). A SHADOW version replaces the policy's shadow, if
// any, and evaluates the share sampleRate (nil: 1) of its live jobs.
// Codes: NOT_FOUND, INVALID_ARGUMENT (compile errors, an unknown mode, a
// sample rate outside 0..1 or without SHADOW).
func (s *Service) AddVersionAs(ctx context.Context, account *domain.Account, policyID, text string, mode domain.PolicyVersionMode, sampleRate *float64) (*domain.PolicyVersion, error) {
	switch mode {
	case "", domain.PolicyVersionActive, domain.PolicyVersionDraft, domain.PolicyVersionShadow:
	default:
		return nil, domain.InvalidField("mode", "must be POLICY_VERSION_MODE_ACTIVE, POLICY_VERSION_MODE_SHADOW or POLICY_VERSION_MODE_DRAFT")
	}
	if mode == "" {
		mode = domain.PolicyVersionActive
	}
	rate := 1.0
	if sampleRate != nil {
		if mode != domain.PolicyVersionShadow {
			return nil, domain.InvalidField("shadowSampleRate", "applies to POLICY_VERSION_MODE_SHADOW versions only")
		}
		if r := *sampleRate; r < 0 || r > 1 || r != r {
			return nil, domain.InvalidField("shadowSampleRate", "must be between 0 and 1; got "+strconv.FormatFloat(r, 'g', -1, 64))
		}
		rate = *sampleRate
	}
	if _, err := s.store.GetPolicy(ctx, account.ID, policyID); err != nil {
		return nil, err
	}
	plan, err := s.compile(text)
	if err != nil {
		return nil, err
	}
	v := newVersion(policyID, text, plan, s.clock.Now())
	v.Mode = mode
	if mode == domain.PolicyVersionShadow {
		v.ShadowSampleRate = rate
	}
	err = s.store.AddPolicyVersion(ctx, account.ID, v)
	s.forget(account.ID, policyID) // also on error: the write may have landed
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Activate makes a version of the policy its active version: jobs from now
// on are evaluated with it. Activating the shadow version ends the
// shadowing. Codes: NOT_FOUND (policy, or not a version of it).
func (s *Service) Activate(ctx context.Context, account *domain.Account, policyID, versionID string) (*domain.Policy, error) {
	p, err := s.store.ActivatePolicyVersion(ctx, account.ID, policyID, versionID, s.clock.Now())
	s.forget(account.ID, policyID)
	return p, err
}

// Shadow returns the policy's shadow version ("" for none) and its sample
// rate, read as jobs read the policy (cached for the active TTL). Codes:
// NOT_FOUND.
func (s *Service) Shadow(ctx context.Context, accountID, policyID string) (versionID string, sampleRate float64, err error) {
	p, err := s.activePolicy(ctx, accountID, policyID)
	if err != nil {
		return "", 0, err
	}
	return p.ShadowVersionID, p.ShadowSampleRate, nil
}

// withMode sets v's mode to its role in p now.
func withMode(p *domain.Policy, v *domain.PolicyVersion) {
	if p == nil {
		return
	}
	switch v.ID {
	case p.ActiveVersionID:
		v.Mode = domain.PolicyVersionActive
	case p.ShadowVersionID:
		v.Mode, v.ShadowSampleRate = domain.PolicyVersionShadow, p.ShadowSampleRate
	default:
		v.Mode = domain.PolicyVersionDraft
	}
}
