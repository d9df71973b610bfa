package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// cliDatabases are the settings of a CLI run against each backend: SQLite
// in a data dir, and PostgreSQL in a schema of its own (dropped after t).
func cliDatabases(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, b := range persistencetest.Backends(t) {
		env := map[string]string{"CONTENTEVAL_DATA_DIR": t.TempDir(), "CONTENTEVAL_LOG_LEVEL": "error"}
		if b.Name == persistencetest.Postgres {
			u, err := url.Parse(os.Getenv(persistencetest.EnvDatabaseURL))
			require.NoError(t, err)
			raw := make([]byte, 8)
			_, err = rand.Read(raw)
			require.NoError(t, err)
			schema := "ce_cli_" + hex.EncodeToString(raw)
			admin, err := persistence.Open(t.Context(), u.String())
			require.NoError(t, err)
			_, err = admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema)
			require.NoError(t, err)
			t.Cleanup(func() {
				_, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
				require.NoError(t, err)
				_ = admin.Close()
			})
			q := u.Query()
			q.Set("search_path", schema) // lib/pq sends it as a run-time parameter
			u.RawQuery = q.Encode()
			env["CONTENTEVAL_DATABASE_URL"] = u.String()
		}
		out[b.Name] = env
	}
	return out
}

// The operator commands on both backends, with flags before, after and
// between positional arguments and in the standard library's single-dash
// form.
func TestCLIAdminOnBothBackends(t *testing.T) {
	t.Parallel()
	for name, env := range cliDatabases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cliRun := func(args ...string) (int, string, string) {
				t.Helper()
				var out, errOut bytes.Buffer
				code := run(t.Context(), args, &out, &errOut, func(k string) string { return env[k] })
				return code, out.String(), errOut.String()
			}
			code, out, errOut := cliRun("migrate", "--json")
			require.Equal(t, 0, code, errOut)
			jsonObject(t, out, "ok", "message")

			code, out, errOut = cliRun("accounts", "create", "-json", "-name", "acme", "--type=policy-first")
			require.Equal(t, 0, code, errOut)
			id := jsonObject(t, out, "accountId", "name", "type")["accountId"].(string)

			code, out, errOut = cliRun("keys", "create", "--json", "--account", id, "--ttl", "720h")
			require.Equal(t, 0, code, errOut)
			created := jsonObject(t, out, "keyId", "token", "role", "name", "expiresAt")
			require.Equal(t, "admin", created["role"], "no --role: admin")
			keyID := created["keyId"].(string)

			code, out, errOut = cliRun("keys", "create", "--account", id, "--role", "reviewer", "--name", "Ana", "--json")
			require.Equal(t, 0, code, errOut)
			reviewerID := jsonObject(t, out, "keyId", "token", "role", "name", "expiresAt")["keyId"].(string)
			code, out, _ = cliRun("keys", "list", "--account", id, "--json")
			require.Equal(t, 0, code)
			listed := map[string][2]any{}
			for _, k := range jsonObject(t, out, "keys")["keys"].([]any) {
				k := k.(map[string]any)
				listed[k["keyId"].(string)] = [2]any{k["role"], k["name"]}
			}
			require.Equal(t, map[string][2]any{keyID: {"admin", ""}, reviewerID: {"reviewer", "Ana"}}, listed)
			code, _, errOut = cliRun("keys", "create", "--account", id, "--role", "owner")
			require.Equal(t, 2, code, "an unknown role is a usage error: %s", errOut)

			code, out, errOut = cliRun("accounts", "set-limits", "--rps", "5", id, "-json", "--burst=10")
			require.Equal(t, 0, code, errOut)
			lim := jsonObject(t, out, "accountId", "rps", "burst", "evaluationsPerDay")
			require.EqualValues(t, 10, lim["burst"])
			require.EqualValues(t, 0, lim["evaluationsPerDay"], "a limit not given is left as it was")

			code, out, errOut = cliRun("accounts", "set", id, "--retention", "7d", "--json")
			require.Equal(t, 0, code, errOut)
			require.EqualValues(t, 7, jsonObject(t, out, "accountId", "retentionDays")["retentionDays"])

			hashes := filepath.Join(t.TempDir(), "md5.txt")
			require.NoError(t, os.WriteFile(hashes, []byte("d41d8cd98f00b204e9800998ecf8427e\n"), 0o600))
			code, out, errOut = cliRun("hashlists", "import", hashes, "--name", "bad", "--kind", "md5", "--json")
			require.Equal(t, 0, code, errOut)
			require.EqualValues(t, 1, jsonObject(t, out, "name", "kind", "count")["count"])
			code, out, _ = cliRun("hashlists", "list", "--json")
			require.Equal(t, 0, code)
			require.Len(t, jsonObject(t, out, "hashLists")["hashLists"], 1)
			code, _, errOut = cliRun("hashlists", "delete", "bad")
			require.Equal(t, 0, code, errOut)

			code, _, errOut = cliRun("keys", "revoke", keyID)
			require.Equal(t, 0, code, errOut)
			code, out, _ = cliRun("keys", "list", "--account", id, "--json")
			require.Equal(t, 0, code)
			revoked := map[string]any{}
			for _, k := range jsonObject(t, out, "keys")["keys"].([]any) {
				revoked[k.(map[string]any)["keyId"].(string)] = k.(map[string]any)["revokedAt"]
			}
			require.NotNil(t, revoked[keyID])
			require.Nil(t, revoked[reviewerID])
		})
	}
}
