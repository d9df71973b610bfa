package policies

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

func TestCheckRules(t *testing.T) {
	t.Parallel()
	label := rules.CompileOptions{LabelName: "L"}
	for _, tc := range []struct {
		name   string
		text   string
		opts   rules.CompileOptions
		limit  int
		errors []domain.CompilationError
		code   domain.Code
	}{
		{name: "compiles", text: `=("kill") OR REGEX("[0-9]+")`, opts: label, limit: 100, errors: []domain.CompilationError{}},
		{name: "every error", text: "=(\"kill\")\nREGEX(\"(\")\n  SENTIMENT(\"meh\")", opts: label, limit: 100, errors: []domain.CompilationError{
			{Line: 2, Column: 1, Message: "invalid REGEX: missing closing ): `(`"},
			{Line: 3, Column: 3, Message: `SENTIMENT takes "negative", "positive" or "neutral", not "meh"`},
		}},
		{name: "kind decides", text: `=("kill")`, limit: 100, errors: []domain.CompilationError{
			{Line: 1, Column: 1, Message: `expected LABEL, SECTION, PRIORITY or EXCEPT WHEN, found "=" (rules belong inside a LABEL or SECTION block)`},
		}},
		{name: "at the limit", text: `=("` + strings.Repeat("a", 95) + `")`, opts: label, limit: 100, errors: []domain.CompilationError{}},
		{name: "over the limit", text: `=("` + strings.Repeat("a", 96) + `")`, opts: label, limit: 100, code: domain.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := CheckRules(tc.text, tc.opts, tc.limit)
			if tc.code != 0 {
				require.Equal(t, tc.code, domain.ErrorCode(err))
				require.Contains(t, err.Error(), "text")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.errors, got.Errors)
			if len(tc.errors) == 0 {
				require.NotNil(t, got.Stats)
				require.Positive(t, got.Stats.SignalCount)
			} else {
				require.Nil(t, got.Stats)
			}
		})
	}
}
