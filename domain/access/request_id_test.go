package access_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/access"
)

func TestRequestID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{"letters digits and punctuation", "req-42_a.B", true},
		{"longest", strings.Repeat("a", access.MaxRequestIDLength), true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", access.MaxRequestIDLength+1), false},
		{"space", "req 42", false},
		{"newline", "req\n{\"level\":\"ERROR\"}", false},
		{"carriage return", "req\r\nSet-Cookie: a=b", false},
		{"quote", `req"42`, false},
		{"non-ASCII", "réq", false},
		{"NUL", "req\x00", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := access.RequestID(tc.id)
			if tc.kept {
				require.Equal(t, tc.id, got)
				return
			}
			require.Regexp(t, `^[0-9a-f]{32}$`, got, "a new id replaces %q", tc.id)
		})
	}
}
