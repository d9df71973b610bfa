package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCLIHashLists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "list.txt")
	require.NoError(t, os.WriteFile(file, []byte("# exported\nd41d8cd98f00b204e9800998ecf8427e\n0CC175B9C0F1B6A831C399E269772661\n"), 0o600))

	code, out, errOut := cli(t, dir, "hashlists", "import", "--name", "known", "--kind", "md5", file, "--json")
	require.Equal(t, 0, code, errOut)
	got := jsonObject(t, out, "name", "kind", "count")
	require.EqualValues(t, 2, got["count"])

	code, out, _ = cli(t, dir, "hashlists", "list", "--json")
	require.Equal(t, 0, code)
	require.Len(t, jsonObject(t, out, "hashLists")["hashLists"], 1)

	require.NoError(t, os.WriteFile(file, []byte("d41d8cd98f00b204e9800998ecf8427e\nnot-a-hash\n"), 0o600))
	code, _, errOut = cli(t, dir, "hashlists", "import", "--name", "known", "--kind", "md5", file)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "line 2")

	code, _, _ = cli(t, dir, "hashlists", "import", "--name", "x", "--kind", "crc32", file)
	require.Equal(t, 2, code)

	code, out, errOut = cli(t, dir, "hashlists", "delete", "known")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "deleted known")
	code, _, errOut = cli(t, dir, "hashlists", "delete", "known")
	require.Equal(t, 1, code)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1)
}

// TestCLIHashListVerbs: the API's verbs for the operator-wide lists.
func TestCLIHashListVerbs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h1, h2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"create", "--name", "ops", "--kind", "pdq", "--mode", "shadow", "--bands", "0,8,16,24", "--flood-limit", "5"}, 0, "created ops"},
		{[]string{"create", "--name", "bad", "--kind", "pdq", "--bands", "9,8,16,24"}, 2, "--bands"},
		{[]string{"add", "ops", h1 + ",bank,first", h2}, 0, "added 2 hashes to ops (2 in all)"},
		{[]string{"add", "ops", "nothex"}, 2, "line 1"},
		{[]string{"disable", "ops", h1}, 0, "HASH_STATE_DISABLED"},
		{[]string{"enable", "ops", h1}, 0, "HASH_STATE_ACTIVE"},
		{[]string{"confirm", "ops", h2}, 0, "HASH_STATE_ACTIVE"},
		{[]string{"hashes", "ops"}, 0, h1 + "\tHASH_STATE_ACTIVE\t0\tbank\tfirst"},
		{[]string{"update", "ops", "--mode", "allow"}, 0, "updated ops"},
		{[]string{"remove", "ops", h2}, 0, "removed " + h2},
		{[]string{"remove", "ops", h2}, 1, "not found"},
		{[]string{"list"}, 0, "ops\tpdq\t1"},
	} {
		code, out, errOut := cli(t, dir, append([]string{"hashlists"}, tc.args...)...)
		require.Equal(t, tc.code, code, "%v: %s %s", tc.args, out, errOut)
		require.Contains(t, out+errOut, tc.want, "%v", tc.args)
	}
	file := filepath.Join(dir, "bank.csv")
	require.NoError(t, os.WriteFile(file, []byte("collab,signal_type,signal_str,category,tags\nc,pdq,"+h2+",TRUE_POSITIVE,\nc,pdq,zz,,\n"), 0o600))
	code, _, errOut := cli(t, dir, "hashlists", "add-file", "ops", "--format", "hma", file)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "line 3")
	require.NoError(t, os.WriteFile(file, []byte("collab,signal_type,signal_str,category,tags\nc,pdq,"+h2+",TRUE_POSITIVE,\nc,url,https://x.test/,,\n"), 0o600))
	code, out, errOut := cli(t, dir, "hashlists", "add-file", "ops", "--format", "hma", file)
	require.Equal(t, 0, code, "%s", errOut)
	require.Contains(t, out, "added 1 hashes to ops (2 in all; 1 rows of other signal types skipped)")
}
