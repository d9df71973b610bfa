package handlers

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/gen"
	"github.com/stretchr/testify/require"
)

// TestOperationRoles keeps operationRoles complete: every operation of
// openapi.yaml has an entry and every entry an operation, so a new endpoint
// cannot be served without deciding who may call it. A secured operation
// some role is refused declares its 403.
func TestOperationRoles(t *testing.T) {
	spec, err := gen.GetSpec()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, o := range operations(spec) {
		seen[o.id] = true
		roles, ok := operationRoles[o.id]
		require.True(t, ok, "operationRoles has no entry for %s", o.id)
		require.Equal(t, roles, o.roles, o.id)
		if !o.secured {
			continue
		}
		require.True(t, roles.Has(domain.RoleAdmin), "%s: admin keys may call everything", o.id)
		refused := false
		for _, r := range domain.KeyRoles {
			refused = refused || !roles.Has(r)
		}
		if refused {
			require.NotNil(t, o.spec.Responses.Value("403"), "%s refuses a role but declares no 403", o.id)
		}
	}
	for id := range operationRoles {
		require.True(t, seen[id], "operationRoles names %s, which openapi.yaml does not have", id)
	}
	require.Equal(t, access.Roles(), operationRoles["uploadBatchInput"], "signed URLs take no key")
}

// TestOperationRolesDocumented keeps the table of docs/api.md#key-roles
// true: each operation it names is in the row of the roles operationRoles
// gives it, and every secured operation is named.
func TestOperationRolesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Key roles\n")
	require.True(t, ok, "docs/api.md has no Key roles section")
	section, _, _ = strings.Cut(section, "\n## ")
	opID := regexp.MustCompile("`([a-zA-Z]+)`")
	named := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "| `") || len(cells) != 4 {
			continue
		}
		for _, m := range opID.FindAllStringSubmatch(cells[0], -1) {
			roles, ok := operationRoles[m[1]]
			require.True(t, ok, "docs/api.md names %s, which has no entry", m[1])
			named[m[1]] = true
			if roles == access.Roles() {
				continue // signed URLs
			}
			for i, r := range domain.KeyRoles {
				require.Equal(t, roles.Has(r), strings.TrimSpace(cells[i+1]) == "yes", "docs/api.md: %s for %s keys", m[1], r)
			}
		}
	}
	for id := range operationRoles {
		require.True(t, named[id], "docs/api.md#key-roles does not name %s", id)
	}
}
