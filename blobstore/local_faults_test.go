//go:build unix

package blobstore_test

import (
	"bytes"
	"github.com/contenteval/contenteval/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/blobstore"
	"github.com/contenteval/contenteval/domain"
)

// Blob files are 0600 in 0700 directories (customer content), whatever the umask
// (0 here, the widest). Not parallel: the umask is the process's.
func TestLocal_PrivateFiles(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	root := filepath.Join(t.TempDir(), "blobs")
	s, err := blobstore.NewLocal(root)
	require.NoError(t, err)
	_, err = s.Put(t.Context(), "batches/b1/input.jsonl", bytes.NewReader([]byte("{}\n")))
	require.NoError(t, err)
	for path, want := range map[string]os.FileMode{
		root:                                 0o700,
		filepath.Join(root, "batches"):       0o700,
		filepath.Join(root, "batches", "b1"): 0o700,
		filepath.Join(root, "batches", "b1", "input.jsonl"): 0o600,
	} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, want, fi.Mode().Perm(), path)
	}
}

// A full file system is UNAVAILABLE "disk full", with no path in the
// message. The store sits on a 1 MiB tmpfs (root; skipped otherwise,
// except under CI=true).
func TestLocal_DiskFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.SkipUnlessCI(t, "not root: this test mounts a tmpfs")
	}
	dir, err := os.MkdirTemp("", "blobstore-tmpfs-")
	require.NoError(t, err)
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount: %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
		_ = os.Remove(dir)
	})
	s, err := blobstore.NewLocal(filepath.Join(dir, "blobs"))
	require.NoError(t, err)

	_, err = s.Put(t.Context(), "batches/b1/input.jsonl", bytes.NewReader(make([]byte, 2<<20)))
	require.Equal(t, domain.Unavailable, domain.ErrorCode(err), "%v", err)
	require.Equal(t, "storage is unavailable: disk full", domain.ErrorMessage(err))
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "batches", "b1"))
	require.NoError(t, err)
	require.Empty(t, entries, "the partial file is removed")
}
