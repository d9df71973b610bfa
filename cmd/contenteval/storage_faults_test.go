//go:build unix

package main

import (
	"context"
	"fmt"
	"github.com/contenteval/contenteval/internal/testenv"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

const (
	msgDiskFull = "storage is unavailable: disk full"
	msgLost     = "storage is unavailable: the database file was deleted or replaced"
)

// requireRoot skips t when the test cannot mount file systems, except under
// CI=true, which runs as root and must not pass by skipping.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	testenv.SkipUnlessCI(t, "not root: the storage fault tests mount a tmpfs")
}

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory under the
// system temporary directory and unmounts it when t ends (after the
// cleanups registered later, such as the server's).
func mountTmpfs(t *testing.T, size int, opts ...string) string {
	t.Helper()
	requireRoot(t)
	dir, err := os.MkdirTemp("", "contenteval-tmpfs-")
	require.NoError(t, err)
	o := strings.Join(append([]string{"size=" + strconv.Itoa(size)}, opts...), ",")
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", o, "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount: %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			return
		}
		_ = os.Remove(dir)
	})
	return dir
}

// fillDisk writes a file in dir until the file system is full and returns
// its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	return path
}

// writeTag is one small write through the API.
func (e *testEnv) writeTag(name string) rawResponse {
	e.t.Helper()
	return e.call(http.MethodPost, "/v1/label-tags", e.LabelFirst.Token, mustJSON(e.t, map[string]any{"name": name, "color": "#ff0000"}))
}

// requireUnavailable asserts a 503 UNAVAILABLE body with message msg.
func requireUnavailable(t *testing.T, r rawResponse, msg string) {
	t.Helper()
	m := requireStatus(t, r, http.StatusServiceUnavailable, domain.Unavailable)
	require.Equal(t, msg, m["message"], "body: %s", r.Body)
}

func (e *testEnv) readyz() rawResponse {
	e.t.Helper()
	return e.do(http.MethodGet, "/readyz", "", "", "")
}

// The data directory on a small tmpfs that fills up: writes answer 503
// "disk full" (not 500), /readyz fails, and both recover when space frees
// up, with /readyz noticing by itself.
func TestStorageFaults_SQLiteDiskFull(t *testing.T) {
	t.Parallel()
	mnt := mountTmpfs(t, 4<<20)
	dataDir := filepath.Join(mnt, "data")
	db, err := persistence.Open(t.Context(), "sqlite:"+filepath.Join(dataDir, "contenteval.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.Migrate(t.Context()))
	env := startServerOn(t, "sqlite", db, func(c *Config) { c.DataDir = dataDir })
	require.Less(t, env.writeTag("before").Status, 300)
	require.Equal(t, http.StatusOK, env.readyz().Status)

	filler := fillDisk(t, mnt)
	requireUnavailable(t, env.writeTag("while-full"), msgDiskFull)
	requireUnavailable(t, env.readyz(), msgDiskFull)
	requireUnavailable(t, env.readyz(), msgDiskFull) // stays failed: nothing freed

	require.NoError(t, os.Remove(filler))
	require.Equal(t, http.StatusOK, env.readyz().Status)
	require.Less(t, env.writeTag("after").Status, 300)
}

// The data directory deleted under a running server: /readyz and writes
// answer 503 rather than writing on into deleted files.
func TestStorageFaults_SQLiteDataDirDeleted(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	db, err := persistence.Open(t.Context(), "sqlite:"+filepath.Join(dataDir, "contenteval.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.Migrate(t.Context()))
	env := startServerOn(t, "sqlite", db, func(c *Config) { c.DataDir = dataDir })
	require.Less(t, env.writeTag("before").Status, 300)
	require.Equal(t, http.StatusOK, env.readyz().Status)

	require.NoError(t, os.RemoveAll(dataDir))
	requireUnavailable(t, env.readyz(), msgLost)
	requireUnavailable(t, env.writeTag("after"), msgLost)
	_, err = os.Stat(dataDir)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing recreated the directory")
}

// PostgreSQL with the test schema in a tablespace on a small tmpfs: a real
// 53100 disk_full. Needs the server on this machine (it must see the
// mount) and root; skipped otherwise, except that CI=true needs root.
func TestStorageFaults_PostgresDiskFull(t *testing.T) {
	t.Parallel()
	if os.Getenv(persistencetest.EnvDatabaseURL) == "" {
		persistencetest.Open(t, persistencetest.Postgres) // skips, or fails under CI
	}
	requireRoot(t)
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Skip("no postgres user: the PostgreSQL server is not on this machine")
	}
	admin, err := persistence.Open(t.Context(), os.Getenv(persistencetest.EnvDatabaseURL))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	var dataDir string
	require.NoError(t, admin.GetContext(t.Context(), &dataDir, "SHOW data_directory"))
	if _, err := os.Stat(dataDir); err != nil {
		t.Skip("the PostgreSQL server is not on this machine")
	}

	mnt := mountTmpfs(t, 4<<20, "mode=0700", "uid="+pg.Uid, "gid="+pg.Gid)
	space := "ce_test_full_" + strconv.Itoa(os.Getpid()) + "_" + filepath.Base(mnt)[len("contenteval-tmpfs-"):]
	_, err = admin.ExecContext(t.Context(), fmt.Sprintf("CREATE TABLESPACE %s LOCATION '%s'", space, mnt))
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP TABLESPACE "+space); err != nil {
			t.Errorf("drop tablespace: %v", err)
		}
	})
	// Every table and index of the schema (migrated here) lands on the tmpfs.
	db := persistencetest.OpenPostgres(t, url.Values{"default_tablespace": {space}})
	env := startServerOn(t, "postgres", db, nil)
	require.Equal(t, http.StatusOK, env.readyz().Status)
	// The start's retention sweep creates the coming days' partitions. Were
	// it to run into the full disk, its aborted transaction would unlink the
	// files it created and so free space the probe write of /readyz could
	// then use: the disk is filled only once that sweep is over.
	require.Eventually(t, func() bool { return env.Main.Retention.Stats().Sweeps.Load() > 0 },
		time.Minute, 10*time.Millisecond, "the start's retention sweep never ended")

	_, err = db.ExecContext(t.Context(), `CREATE TABLE filler (b BYTEA)`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `ALTER TABLE filler ALTER COLUMN b SET STORAGE EXTERNAL`)
	require.NoError(t, err)
	for {
		_, err = db.ExecContext(t.Context(), `INSERT INTO filler SELECT convert_to(repeat('x', 65536), 'UTF8') FROM generate_series(1, 8)`)
		if err != nil {
			break
		}
	}
	requireCodeOf(t, persistence.TranslateError(err), msgDiskFull)

	requireUnavailable(t, env.writeTag("while-full"), msgDiskFull)
	requireUnavailable(t, env.readyz(), msgDiskFull)

	_, err = db.ExecContext(t.Context(), `DROP TABLE filler`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, env.readyz().Status)
	require.Less(t, env.writeTag("after").Status, 300)
}

func requireCodeOf(t *testing.T, err error, msg string) {
	t.Helper()
	require.Equal(t, domain.Unavailable, domain.ErrorCode(err), "%v", err)
	require.Equal(t, msg, domain.ErrorMessage(err))
}

// A first start on a fresh data directory makes every file owner-only
// (0600 files, 0700 directories), whatever the umask; webhook secrets are stored sealed and
// still reach the CLI in plaintext; rows an earlier version wrote in
// plaintext are sealed by the next start that migrates. Not parallel: the
// umask is the process's.
func TestFirstStart_PrivateFilesAndSealedSecrets(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := testConfig(t)
	cfg.DataDir, cfg.JWTKeyFile = dataDir, filepath.Join(dataDir, "jwt-ed25519.pem")
	cfg.DatabaseURL = "sqlite:" + filepath.Join(dataDir, "contenteval.db")

	// An earlier version's row: a plaintext secret.
	db, err := persistence.Open(t.Context(), cfg.DatabaseURL)
	require.NoError(t, err)
	require.NoError(t, db.Migrate(t.Context()))
	now := time.Now().UTC()
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(t.Context(), &domain.Account{ID: "old", Name: "old",
		Type: domain.AccountLabelFirst, WebhookSecret: "whsec_b2xkLXBsYWludGV4dA==", Created: now, Updated: now}))
	require.NoError(t, db.Close())

	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	require.NoError(t, m.Open(t.Context(), true))
	t.Cleanup(func() { _ = m.Close() })
	a, err := createAccount(t.Context(), m, "new", domain.AccountLabelFirst)
	require.NoError(t, err)

	for path, want := range map[string]os.FileMode{
		dataDir:                                  0o700,
		filepath.Join(dataDir, "contenteval.db"): 0o600,
		filepath.Join(dataDir, "contenteval.db-wal"): 0o600,
		filepath.Join(dataDir, "contenteval.db-shm"): 0o600,
		cfg.JWTKeyFile:                  0o600,
		filepath.Join(dataDir, "blobs"): 0o700,
	} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, want, fi.Mode().Perm(), filepath.Base(path))
	}

	raw := func(id string) string {
		var s string
		require.NoError(t, m.DB.GetContext(t.Context(), &s, m.DB.Rebind(`SELECT webhook_secret FROM accounts WHERE id = ?`), id))
		return s
	}
	require.True(t, strings.HasPrefix(raw("old"), "v1:"), "the plaintext row was sealed at start")
	require.NotContains(t, raw("old"), "b2xkLXBsYWludGV4dA")
	require.True(t, strings.HasPrefix(raw(a.ID), "v1:"))
	require.NotContains(t, raw(a.ID), strings.TrimPrefix(a.WebhookSecret, "whsec_"))

	// The CLI reads the same key file and gets the plaintext back.
	env := map[string]string{"CONTENTEVAL_DATA_DIR": dataDir, "CONTENTEVAL_LOG_LEVEL": "error"}
	for id, want := range map[string]string{"old": "whsec_b2xkLXBsYWludGV4dA==", a.ID: a.WebhookSecret} {
		var out, errOut strings.Builder
		code := run(context.Background(), []string{"accounts", "webhook-secret", id, "--json"}, &out, &errOut, func(k string) string { return env[k] })
		require.Equal(t, 0, code, errOut.String())
		require.Equal(t, want, jsonObject(t, out.String(), "secret")["secret"])
	}
}

// An existing data directory open to others is the operator's to narrow:
// the server warns and leaves its mode alone.
func TestWarnOpenDataDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o700, false}, {0o750, true}, {0o755, true}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, tc.mode))
			var logs strings.Builder
			warnOpenDataDir(newLogger(&logs, "info"), dir)
			require.Equal(t, tc.warn, strings.Contains(logs.String(), "chmod 700"), logs.String())
			fi, err := os.Stat(dir)
			require.NoError(t, err)
			require.Equal(t, tc.mode, fi.Mode().Perm())
		})
	}
}
