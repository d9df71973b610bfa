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
