package handlers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/gen"
	"github.com/stretchr/testify/require"
)

// TestAliasesDocumented keeps the spec honest about what acceptAliases
// accepts: every query alias of an operation is named in its description,
// and an operation whose JSON body has fields with a snake_case spelling
// says so and names them.
func TestAliasesDocumented(t *testing.T) {
	spec, err := gen.GetSpec()
	require.NoError(t, err)
	for _, o := range operations(spec) {
		desc := strings.Join(strings.Fields(o.spec.Description), " ") // lines wrap anywhere
		for alias, name := range o.queryAliases {
			require.Contains(t, desc, "`"+alias+"` for `"+name+"`", "%s does not document the alias %s", o.id, alias)
		}
		if s := jsonBodySchema(o.spec); s != nil {
			for name := range s.Properties {
				if snake := snakeCase(name); snake != name {
					require.Contains(t, desc, "snake_case", o.id)
					require.Contains(t, desc, "`"+snake+"`", "%s does not document the body alias %s", o.id, snake)
				}
			}
		}
	}
}

// TestPageSizesDeclareMaximum: every page size of the spec declares a
// maximum (1000 for all of today's, what their services apply), which
// acceptAliases enforces by lowering larger values, and the description
// says so.
func TestPageSizesDeclareMaximum(t *testing.T) {
	spec, err := gen.GetSpec()
	require.NoError(t, err)
	n := 0
	for _, o := range operations(spec) {
		for _, p := range o.spec.Parameters {
			if name := p.Value.Name; name == "pageSize" || name == "page_size" {
				n++
				s := p.Value.Schema.Value
				require.NotNil(t, s.Max, "%s %s declares no maximum", o.id, name)
				require.NotNil(t, s.Min, "%s %s", o.id, name)
				require.EqualValues(t, 0, *s.Min, "%s %s", o.id, name)
				require.EqualValues(t, int64(*s.Max), o.queryMaximum[name], "%s %s is lowered to its maximum", o.id, name)
				desc := strings.Join(strings.Fields(o.spec.Description), " ")
				require.Contains(t, desc, fmt.Sprintf("treated as %d", int64(*s.Max)), "%s says what larger values do", o.id)
			}
		}
	}
	require.GreaterOrEqual(t, n, 7)
}
