package labels

import (
	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/rules"
)

// checkLabelName names the section of a label version's text in a compile dry
// run, which has no label: a name changes no compile error.
const checkLabelName = "label"

// CheckLabelText is the compile dry run of a label version's text: compiled as
// CompileLabelText compiles it, within the rule language's 64 KiB, and nothing
// stored. Codes: INVALID_ARGUMENT (text over the limit).
func CheckLabelText(text string) (*domain.RulesCheck, error) {
	return policies.CheckRules(text, rules.CompileOptions{LabelName: checkLabelName}, rules.DefaultLimits.MaxTextBytes)
}
