package policies

import (
	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// CheckText is the compile dry run of a policy document: compiled as Create and
// AddVersion compile it, within the same text limit, and nothing stored.
// Codes: INVALID_ARGUMENT (text over the limit).
func (s *Service) CheckText(text string) (*domain.RulesCheck, error) {
	return domain.CheckRules(text, rules.CompileOptions{}, s.cfg.MaxTextBytes)
}
