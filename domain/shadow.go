package domain

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// PolicyVersionMode is the API's PolicyVersionMode: the role of a policy
// version (docs/api.md#extension-endpoints).
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

// ShadowEvaluation is one live job result as its policy's shadow version
// evaluated it. Labels holds the labels where either version's outcome is
// TRUE or FAILED (every disagreement among them); a label of the shadow
// version not listed was FALSE for both.
type ShadowEvaluation struct {
	ShadowVersionID string
	JobResultID     string
	AccountID       string
	PolicyID        string
	ActiveVersionID string
	JobID           string
	JobCreated      time.Time
	ContentHash     string
	Disagrees       bool
	Labels          []ShadowLabelOutcome
	Created         time.Time
}

// ShadowLabelOutcome is one label's outcomes under both versions;
// UNSPECIFIED when the version has no such label.
type ShadowLabelOutcome struct {
	Label          string
	Active, Shadow rules.Outcome
	Disagrees      bool
}

// ShadowDisagreement is a label of a live job result whose shadow outcome
// differs from the live one.
type ShadowDisagreement struct {
	JobID, JobResultID, ContentHash, Label string
	Active, Shadow                         rules.Outcome
}

// ShadowOutcomesDisagree reports whether two outcomes of a label differ,
// a label missing from one version (UNSPECIFIED) counting as FALSE.
func ShadowOutcomesDisagree(active, shadow rules.Outcome) bool {
	return notable(active) != notable(shadow)
}

// notable maps an outcome to what a comparison sees: FALSE for a label a
// version lacks.
func notable(o rules.Outcome) rules.Outcome {
	if o == rules.OutcomeUnspecified || o == "" {
		return rules.OutcomeFalse
	}
	return o
}

// ShadowNotable reports whether a label's outcomes are stored with a
// shadow evaluation: either is TRUE or FAILED.
func ShadowNotable(active, shadow rules.Outcome) bool {
	return notable(active) != rules.OutcomeFalse || notable(shadow) != rules.OutcomeFalse
}

// ShadowActive is what a shadow job carries of one live result: its id,
// content hash and the live outcomes other than FALSE, by label.
type ShadowActive struct {
	ResultID    string                   `json:"r"`
	ContentHash string                   `json:"h,omitempty"`
	Outcomes    map[string]rules.Outcome `json:"o,omitempty"`
}

// Options of a shadow job.
const (
	// ShadowOfOption names the live job whose content it evaluates.
	ShadowOfOption = "shadowOf"
	// ShadowActiveOption holds the live results' outcomes (JSON of
	// []ShadowActive), recorded with the completion, so the shadow does
	// not read the live reports again.
	ShadowActiveOption = "active"
	// ShadowFromOption is the index of the first live result a shadow job
	// has not evaluated yet, set when it gave its worker up part-way (the
	// evaluations before it are stored); absent means 0.
	ShadowFromOption = "from"
)

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

// ShadowFinish is a shadow job's end: the job, its holder and its
// evaluations (none when it was dropped).
type ShadowFinish struct {
	JobID, Owner string
	Evaluations  []*ShadowEvaluation
}

// ShadowStore persists shadow evaluations.
type ShadowStore interface {
	// FinishShadowJobs finishes shadow jobs and stores their evaluations,
	// in one transaction; a job its owner no longer holds is skipped with
	// its evaluations. It returns how many jobs it finished.
	FinishShadowJobs(ctx context.Context, finishes []ShadowFinish, now time.Time) (int, error)
	// YieldShadowJob stores the evaluations a shadow job made so far and
	// puts it back in the queue with options (which say where the rest
	// starts), the claim not counted as an attempt, in one transaction.
	// Codes: ABORTED when owner no longer holds the job.
	YieldShadowJob(ctx context.Context, y ShadowFinish, options map[string]string, now time.Time) error
	// ShadowStats summarises the account's shadow evaluations by version
	// versionID, with an entry for each of labels and each other label
	// found, by name.
	ShadowStats(ctx context.Context, accountID, versionID string, labels []string) (*ShadowStats, error)
	// ListShadowDisagreements returns up to limit labels of the version's
	// evaluations where the outcomes disagree, after the cursor, in (job
	// result, label) order.
	ListShadowDisagreements(ctx context.Context, accountID, versionID string, after *ShadowCursor, limit int) ([]*ShadowDisagreement, error)
}
