package persistence

import (
	"io/fs"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every migration exists for both dialects under the same name, and names
// follow NNNNN_snake_case.sql, so the two schemas evolve in lockstep.
func TestMigrations_SameVersionsPerDialect(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`^\d{5}_[a-z0-9_]+\.sql$`)
	names := map[Dialect][]string{}
	for _, d := range []Dialect{Postgres, SQLite} {
		entries, err := fs.ReadDir(migrations, "migrations/"+string(d))
		require.NoError(t, err)
		for _, e := range entries {
			require.Regexp(t, name, e.Name(), "%s migration name", d)
			names[d] = append(names[d], e.Name())
		}
	}
	require.NotEmpty(t, names[Postgres])
	require.Equal(t, names[Postgres], names[SQLite])
}
