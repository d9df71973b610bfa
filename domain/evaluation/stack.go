package evaluation

import (
	"fmt"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// CheckStack refuses a stack name the server cannot evaluate with, when the
// version or job naming it is created: field names it in the error.
func CheckStack(b domain.SignalBackends, field, stack string) error {
	switch {
	case stack == "" || stack == domain.BuiltinStack:
		return nil
	case len(stack) > domain.MaxStackLength:
		return domain.InvalidField(field, fmt.Sprintf("must be at most %d characters", domain.MaxStackLength))
	case b == nil:
		return domain.InvalidField(field, fmt.Sprintf("names model backend %q, but this server has no model backends (only %q)", stack, domain.BuiltinStack))
	case !b.KnownStack(stack):
		return domain.InvalidField(field, fmt.Sprintf("names model backend %q, which this server does not have; it has %s", stack,
			strings.Join(append(b.Stacks(), domain.BuiltinStack), ", ")))
	}
	return nil
}
