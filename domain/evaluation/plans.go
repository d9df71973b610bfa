package evaluation

import (
	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// Plans is the one cache of compiled plans, of policy and label versions
// alike: versions are immutable, so a plan never goes stale. The server
// makes one and hands it to every service that evaluates (policies,
// label evaluation, dataset runs and shadow versions).
type Plans struct {
	cache *rules.Cache
}

// NewPlans returns a cache of at most size plans (at least 1).
func NewPlans(size int) *Plans {
	return &Plans{cache: rules.NewCache(size)}
}

// Policy returns the plan of a policy version; maxTextBytes bounds the
// content it evaluates (the version's own text may be longer). Codes:
// INVALID_ARGUMENT (the text does not compile).
func (p *Plans) Policy(v *domain.PolicyVersion, maxTextBytes int) (*rules.Plan, error) {
	return p.cache.GetOrCompile(v.ID, v.Text, rules.CompileOptions{Limits: rules.Limits{MaxTextBytes: max(maxTextBytes, len(v.Text))}})
}

// Label returns the plan of a label version whose section takes the
// label's current name, so the plan is keyed by the name too.
func (p *Plans) Label(v *domain.LabelVersion, labelName string) (*rules.Plan, error) {
	return p.cache.GetOrCompile(v.ID+"\x00"+labelName, v.Text, rules.CompileOptions{LabelName: labelName})
}

// Len returns the number of cached plans.
func (p *Plans) Len() int { return p.cache.Len() }
