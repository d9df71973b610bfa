//go:build unix

package persistence_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
)

// Storage faults are UNAVAILABLE with a message that says which
// (docs/api.md#error-bodies), not INTERNAL; busy and connection errors keep the generic one.
func TestTranslateError_StorageFaults(t *testing.T) {
	t.Parallel()
	const busy = "the database is busy or unreachable; retry later"
	tests := []struct {
		name string
		err  error
		msg  string
	}{
		{"pg disk full", &pq.Error{Code: "53100", Message: `could not extend file "base/1/2": No space left on device`}, "storage is unavailable: disk full"},
		{"pg wrapped disk full", fmt.Errorf("commit: %w", &pq.Error{Code: "53100"}), "storage is unavailable: disk full"},
		{"pg out of memory", &pq.Error{Code: "53200"}, "the database is out of memory; retry later"},
		{"pg too many connections", &pq.Error{Code: "53300"}, busy},
		{"pg configuration limit", &pq.Error{Code: "53400"}, busy},
		{"pg io error", &pq.Error{Code: "58030", Message: `could not write to file "pg_wal/xlogtemp.1"`}, "storage is unavailable: I/O error"},
		{"pg undefined file", &pq.Error{Code: "58P01"}, "storage is unavailable: I/O error"},
		{"pg system error", &pq.Error{Code: "58000"}, "storage is unavailable: I/O error"},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, busy},
		{"connection cut mid-message", fmt.Errorf("pq: %w", io.ErrUnexpectedEOF), busy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := persistence.TranslateError(tt.err)
			requireCode(t, got, domain.Unavailable)
			require.Equal(t, tt.msg, domain.ErrorMessage(got))
			for _, leak := range []string{"base/", "pg_wal", "extend", "No space"} {
				require.NotContains(t, domain.ErrorMessage(got), leak, "no driver text or paths in client messages")
			}
			require.ErrorIs(t, got, tt.err)
		})
	}
}

// openSQLite opens a fresh migrated SQLite database in its own directory
// and returns it with its path.
func openSQLite(t *testing.T) (*persistence.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "contenteval.db")
	db, err := persistence.Open(t.Context(), "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.Migrate(t.Context()))
	return db, path
}

// bigAccount needs new pages: no write of it fits in the free space of
// pages the database already has.
func bigAccount(id string) *domain.Account {
	a := newAccount(id, t0)
	a.Name = strings.Repeat("x", 64<<10)
	return a
}

// A real SQLITE_FULL (max_page_count caps the file as a full disk would):
// the write is UNAVAILABLE "disk full", Ready fails with the same message
// while reads still work, and Ready passes again once space is back, with
// no write from outside needed to notice.
func TestReady_SQLiteDiskFull(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, _ := openSQLite(t)
	// max_page_count is per connection: keep to one.
	db.SetMaxOpenConns(1)
	accounts := persistence.NewAccounts(db)
	require.NoError(t, accounts.CreateAccount(ctx, newAccount("small", t0)))
	require.NoError(t, db.Ready(ctx))

	var pages int
	require.NoError(t, db.GetContext(ctx, &pages, "PRAGMA page_count"))
	_, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages))
	require.NoError(t, err)

	err = accounts.CreateAccount(ctx, bigAccount("big"))
	requireCode(t, err, domain.Unavailable)
	require.Equal(t, "storage is unavailable: disk full", domain.ErrorMessage(err))

	err = db.Ready(ctx)
	requireCode(t, err, domain.Unavailable)
	require.Equal(t, "storage is unavailable: disk full", domain.ErrorMessage(err))
	_, err = accounts.GetAccount(ctx, "small")
	require.NoError(t, err, "reads go on")
	requireCode(t, db.Ready(ctx), domain.Unavailable) // the fault holds until a probe passes

	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages*100))
	require.NoError(t, err)
	require.NoError(t, db.Ready(ctx))
	require.NoError(t, db.Ready(ctx))
	require.NoError(t, accounts.CreateAccount(ctx, bigAccount("big")))
}

// A SQLite file deleted, replaced or left without its directory under a
// running process: writes would go to an inode nobody will read again.
// They are UNAVAILABLE instead, and so is Ready, for good.
func TestReady_SQLiteFileLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lose func(t *testing.T, path string)
	}{
		{"file deleted", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }},
		{"directory deleted", func(t *testing.T, path string) { require.NoError(t, os.RemoveAll(filepath.Dir(path))) }},
		{"file replaced", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "other.db")
			require.NoError(t, os.WriteFile(other, nil, 0o600))
			require.NoError(t, os.Rename(other, path))
		}},
		{"log deleted", func(t *testing.T, path string) { require.NoError(t, os.Remove(path+"-wal")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, path := openSQLite(t)
			accounts := persistence.NewAccounts(db)
			require.NoError(t, accounts.CreateAccount(ctx, newAccount("a", t0)))
			require.NoError(t, db.Ready(ctx))

			tt.lose(t, path)

			const lost = "storage is unavailable: the database file was deleted or replaced"
			err := db.Ready(ctx)
			requireCode(t, err, domain.Unavailable)
			require.Equal(t, lost, domain.ErrorMessage(err))
			err = accounts.CreateAccount(ctx, newAccount("b", t0))
			requireCode(t, err, domain.Unavailable)
			require.Equal(t, lost, domain.ErrorMessage(err))
			require.NotContains(t, err.Error(), path, "the path stays out of the error")
		})
	}
}

// A missing storage_probe table (a database not migrated this far) must not
// pass for the fault being over.
func TestReady_ProbeFailureKeepsFault(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, _ := openSQLite(t)
	db.SetMaxOpenConns(1)
	var pages int
	require.NoError(t, db.GetContext(ctx, &pages, "PRAGMA page_count"))
	_, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages))
	require.NoError(t, err)
	requireCode(t, persistence.NewAccounts(db).CreateAccount(ctx, bigAccount("big")), domain.Unavailable)
	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages*100))
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "DROP TABLE storage_probe")
	require.NoError(t, err)

	err = db.Ready(ctx)
	requireCode(t, err, domain.Unavailable)
	require.Equal(t, "storage is unavailable: disk full", domain.ErrorMessage(err))
}

// Files are 0600 and a created directory 0700 whatever the umask (0 here,
// the widest), the -wal and -shm files included; a database file left 0644
// by an earlier version is narrowed. Not parallel: the umask is the
// process's.
func TestOpen_SQLiteFileModes(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })

	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "contenteval.db")
	db, err := persistence.Open(t.Context(), "sqlite:"+path)
	require.NoError(t, err)
	require.NoError(t, db.Migrate(t.Context()))
	requireMode(t, dir, 0o700)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		requireMode(t, p, 0o600)
	}
	require.NoError(t, db.Close())

	older := filepath.Join(t.TempDir(), "older.db")
	require.NoError(t, os.WriteFile(older, nil, 0o644))
	db, err = persistence.Open(t.Context(), "sqlite:"+older)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.Migrate(t.Context()))
	for _, p := range []string{older, older + "-wal", older + "-shm"} {
		requireMode(t, p, 0o600)
	}
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, want, fi.Mode().Perm(), "%s: %v", filepath.Base(path), fi.Mode())
}
