package domain

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// PolicyVersionMode is the API's PolicyVersionMode: the role of a policy
// version (DESIGN §12).
type PolicyVersionMode string

// Policy version modes.
const (
	// PolicyVersionActive: the version jobs are evaluated with.
	PolicyVersionActive PolicyVersionMode = "POLICY_VERSION_MODE_ACTIVE"
	// PolicyVersionShadow: evaluated on a sample of the live jobs after
	// their result is recorded, for comparison only.
	PolicyVersionShadow PolicyVersionMode = "POLICY_VERSION_MODE_SHADOW"
	// PolicyVersionDraft: stored, used by nothing until activated.
	PolicyVersionDraft PolicyVersionMode = "POLICY_VERSION_MODE_DRAFT"
)

// ShadowResult is one label of one live job result as its policy's active
// version and its shadow version judged it.
type ShadowResult struct {
	ShadowVersionID string
	JobResultID     string
	Label           string
	AccountID       string
	PolicyID        string
	ActiveVersionID string
	JobID           string
	JobCreated      time.Time
	ContentHash     string
	// Active and Shadow are the label's outcomes; UNSPECIFIED when the
	// version has no such label.
	Active, Shadow rules.Outcome
	Disagrees      bool
	Created        time.Time
}

// ShadowOutcomesDisagree reports whether two outcomes of a label differ,
// a label missing from one version (UNSPECIFIED) counting as FALSE.
func ShadowOutcomesDisagree(active, shadow rules.Outcome) bool {
	norm := func(o rules.Outcome) rules.Outcome {
		if o == rules.OutcomeUnspecified || o == "" {
			return rules.OutcomeFalse
		}
		return o
	}
	return norm(active) != norm(shadow)
}

// ShadowLabelStats counts one label's TRUE outcomes over a shadow's
// evaluations.
type ShadowLabelStats struct {
	Label                            string
	ActiveTrue, ShadowTrue, BothTrue int
}

// ShadowStats summarises a shadow version's evaluations: job results
// evaluated, those where every label agreed and those where one did not.
type ShadowStats struct {
	Evaluated, Agreements, Disagreements int
	Labels                               []ShadowLabelStats
}

// ShadowCursor is the keyset position in a shadow's disagreements.
type ShadowCursor struct {
	JobResultID string `json:"r"`
	Label       string `json:"l"`
}

// ShadowStore persists shadow evaluations.
type ShadowStore interface {
	// FinishShadowJob finishes the shadow job jobID held by owner and
	// stores its results, in one transaction. Codes: ABORTED when owner no
	// longer holds the job (nothing is stored).
	FinishShadowJob(ctx context.Context, jobID, owner string, results []*ShadowResult, now time.Time) error
	// ShadowStats summarises the account's shadow evaluations by version
	// versionID.
	ShadowStats(ctx context.Context, accountID, versionID string) (*ShadowStats, error)
	// ListShadowDisagreements returns up to limit results of the version
	// where the outcomes disagree, after the cursor, in (job result,
	// label) order.
	ListShadowDisagreements(ctx context.Context, accountID, versionID string, after *ShadowCursor, limit int) ([]*ShadowResult, error)
}

// ShadowOfOption is the option of a shadow job naming the live job whose
// content it evaluates.
const ShadowOfOption = "shadowOf"
