package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEnsureTempDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	blocker := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	tests := []struct {
		name    string
		dir     string
		wantErr bool
	}{
		{name: "missing under an empty volume", dir: filepath.Join(root, "data", "tmp")},
		{name: "already there", dir: root},
		{name: "a file in the way", dir: filepath.Join(blocker, "tmp"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ensureTempDir(tt.dir)
			if tt.wantErr {
				require.ErrorContains(t, err, "TMPDIR")
				return
			}
			require.NoError(t, err)
			fi, err := os.Stat(tt.dir)
			require.NoError(t, err)
			require.True(t, fi.IsDir())
			f, err := os.CreateTemp(tt.dir, "probe-")
			require.NoError(t, err, "the directory must be writable")
			require.NoError(t, f.Close())
		})
	}
}
