package persistence

import (
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"
)

// textArray's literal must read back as the same strings through lib/pq's
// own array parser (the one PostgreSQL's syntax is mirrored by); the
// persistence tests cover the database's side.
func FuzzTextArray(f *testing.F) {
	f.Add("plain", `{"quoted": "json \\ with \"escapes\""}`, "")
	f.Add("NULL", "a,b", "{}")
	f.Add(" spaces ", "\t\n", "é ✓")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		in := textArray{a, b, c}
		v, err := in.Value()
		require.NoError(t, err)
		var out pq.StringArray
		require.NoError(t, out.Scan(v))
		require.Equal(t, []string(in), []string(out))
	})
}

func TestTextArray_Empty(t *testing.T) {
	t.Parallel()
	v, err := textArray{}.Value()
	require.NoError(t, err)
	require.Equal(t, "{}", v)
}
