package domain

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// Policy is a named rule document of a policy-first account (an extension). Its
// rules live in immutable versions; ActiveVersionID names the one jobs use.
type Policy struct {
	ID              string
	AccountID       string
	Key             string // unique per account
	ActiveVersionID string
	// ShadowVersionID names the shadow version ("" for none) and
	// ShadowSampleRate the share of live jobs it evaluates (docs/api.md#extension-endpoints).
	ShadowVersionID  string
	ShadowSampleRate float64
	Disabled         bool
	Created          time.Time
	Updated          time.Time
}

// PolicyVersion is one immutable version of a policy's rule text.
type PolicyVersion struct {
	ID              string
	PolicyID        string
	Seq             int // 1, 2, ... within the policy
	Text            string
	TokenCounts     rules.TokenCounts
	ComplexityScore float64
	Created         time.Time
	// Mode is the version's role: on AddPolicyVersion, the role it takes
	// ("" is ACTIVE), with ShadowSampleRate for a SHADOW; when read through
	// the policy service, its role now (the policy's active version, its
	// shadow, or neither: DRAFT).
	Mode             PolicyVersionMode
	ShadowSampleRate float64
}

// PolicyCursor is the keyset position of a policy listing: newest first.
type PolicyCursor struct {
	Created time.Time `json:"c"`
	ID      string    `json:"i"`
}

// PolicyStore persists policies and their versions.
type PolicyStore interface {
	// CreatePolicy inserts p and its first version v in one transaction.
	// Codes: ALREADY_EXISTS when the account already has p.Key.
	CreatePolicy(ctx context.Context, p *Policy, v *PolicyVersion) error
	// GetPolicy returns a policy of the account. Codes: NOT_FOUND (also for
	// another account's policy).
	GetPolicy(ctx context.Context, accountID, id string) (*Policy, error)
	// GetPolicyByKey returns the account's policy with that policyKey.
	// Codes: NOT_FOUND.
	GetPolicyByKey(ctx context.Context, accountID, key string) (*Policy, error)
	// ListPolicies returns up to limit policies of the account, newest first
	// (created, id descending), after the cursor when one is given.
	ListPolicies(ctx context.Context, accountID string, after *PolicyCursor, limit int) ([]*Policy, error)
	// AddPolicyVersion appends v (its Seq is assigned by the store: the next
	// one) and, by v.Mode, makes it the active version (ACTIVE or ""), the
	// shadow version with v.ShadowSampleRate in place of any other (SHADOW),
	// or neither (DRAFT), setting the policy's Updated to v.Created.
	// Codes: NOT_FOUND.
	AddPolicyVersion(ctx context.Context, accountID string, v *PolicyVersion) error
	// ActivatePolicyVersion makes a version of the account's policy its
	// active version; when it was the shadow, the policy has no shadow
	// after. Returns the policy. Codes: NOT_FOUND (policy, or a version of
	// another policy).
	ActivatePolicyVersion(ctx context.Context, accountID, policyID, versionID string, now time.Time) (*Policy, error)
	// GetPolicyVersion returns one version of a policy. Codes: NOT_FOUND.
	GetPolicyVersion(ctx context.Context, policyID, versionID string) (*PolicyVersion, error)
	// ListPolicyVersions returns up to limit versions with Seq > afterSeq,
	// oldest first.
	ListPolicyVersions(ctx context.Context, policyID string, afterSeq, limit int) ([]*PolicyVersion, error)
	// SetPolicyDisabled sets the disabled flag. Codes: NOT_FOUND.
	SetPolicyDisabled(ctx context.Context, accountID, id string, disabled bool, now time.Time) (*Policy, error)
}
