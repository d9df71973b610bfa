package persistence_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func TestMigrate_Idempotent(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		// The harness migrated once already.
		require.NoError(t, db.Migrate(t.Context()))
		require.NoError(t, db.Migrate(t.Context()))

		var version int64
		require.NoError(t, db.GetContext(t.Context(), &version, `SELECT MAX(version_id) FROM goose_db_version`))
		require.GreaterOrEqual(t, version, int64(1))
		n, err := persistence.NewAccounts(db).CountAccounts(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// Replicas starting together migrate the same database concurrently.
func TestMigrate_Concurrent(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = db.Migrate(t.Context()) })
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
	})
}

func TestOpen_RejectsBadURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url string
	}{
		{"empty", ""},
		{"other scheme", "mysql://user:secret@host/db"},
		{"sqlite without path", "sqlite:"},
		{"sqlite in memory", "sqlite::memory:"},
		{"sqlite URI filename", "sqlite:file:x.db?mode=ro"},
		{"sqlite path with query", "sqlite:x.db?cache=shared"},
		{"malformed postgres", "postgres://user:secret@host:port/db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db, err := persistence.Open(t.Context(), tt.url)
			require.Error(t, err)
			require.Nil(t, db)
			require.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestOpen_SQLite(t *testing.T) {
	t.Parallel()
	// The parent directories do not exist yet.
	path := filepath.Join(t.TempDir(), "a", "b", "contenteval.db")
	db, err := persistence.Open(t.Context(), "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	require.Equal(t, persistence.SQLite, db.Dialect)
	require.NoError(t, db.Ping(t.Context()))

	// Per-connection settings hold on every pooled connection: take several
	// at once.
	conns := make([]*sqlx.Conn, 3)
	for i := range conns {
		conns[i], err = db.Connx(t.Context())
		require.NoError(t, err)
		defer conns[i].Close()
	}
	for _, c := range conns {
		for pragma, want := range map[string]string{
			"journal_mode": "wal",
			"foreign_keys": "1",
			"busy_timeout": "5000",
			"synchronous":  "1", // NORMAL
		} {
			var got string
			require.NoError(t, c.GetContext(t.Context(), &got, "PRAGMA "+pragma))
			require.Equal(t, want, strings.ToLower(got), pragma)
		}
	}
	require.Equal(t, "SELECT 1 WHERE 1 = ?", db.Rebind("SELECT 1 WHERE 1 = ?"))
}

func TestOpen_Postgres(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	require.Equal(t, persistence.Postgres, db.Dialect)
	require.NoError(t, db.Ping(t.Context()))

	var tz, schema string
	require.NoError(t, db.GetContext(t.Context(), &tz, "SHOW TimeZone"))
	require.Equal(t, "UTC", tz)
	require.NoError(t, db.GetContext(t.Context(), &schema, "SELECT current_schema()"))
	require.True(t, strings.HasPrefix(schema, "ce_test_"), schema)
	require.Equal(t, "SELECT 1 WHERE 1 = $1", db.Rebind("SELECT 1 WHERE 1 = ?"))
}

func TestInTx(t *testing.T) {
	t.Parallel()
	insert := func(tx *sqlx.Tx, id string) error {
		_, err := tx.Exec(tx.Rebind(`
			INSERT INTO accounts (id, name, type, created, updated) VALUES (?, 'n', 'label-first', ?, ?)`),
			id, t0, t0)
		return err
	}
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		s := persistence.NewAccounts(db)

		require.NoError(t, db.InTx(ctx, func(tx *sqlx.Tx) error { return insert(tx, "committed") }))
		_, err := s.GetAccount(ctx, "committed")
		require.NoError(t, err)

		errFn := errors.New("boom")
		err = db.InTx(ctx, func(tx *sqlx.Tx) error {
			require.NoError(t, insert(tx, "rolled-back"))
			return errFn
		})
		require.ErrorIs(t, err, errFn)
		_, err = s.GetAccount(ctx, "rolled-back")
		requireCode(t, err, domain.NotFound)

		require.PanicsWithValue(t, "fn panicked", func() {
			_ = db.InTx(ctx, func(tx *sqlx.Tx) error {
				require.NoError(t, insert(tx, "panicked"))
				panic("fn panicked")
			})
		})
		_, err = s.GetAccount(ctx, "panicked")
		requireCode(t, err, domain.NotFound)

		// A raw driver error from fn comes back translated.
		err = db.InTx(ctx, func(tx *sqlx.Tx) error { return insert(tx, "committed") })
		requireCode(t, err, domain.AlreadyExists)

		// The panic released everything: writes still work.
		require.NoError(t, db.InTx(ctx, func(tx *sqlx.Tx) error { return insert(tx, "after") }))
	})
}

// A writer queued behind another one gives up when its context ends, instead
// of waiting out SQLite's busy timeout.
func TestInTx_SQLiteWaitHonoursContext(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.SQLite)
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- db.InTx(context.Background(), func(*sqlx.Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := db.InTx(ctx, func(*sqlx.Tx) error { t.Error("fn ran without the write slot"); return nil })
	requireCode(t, err, domain.Canceled)

	close(release)
	require.NoError(t, <-done)
}

// updateConcurrently runs n UpdateAccount calls at once, each adding one to
// Burst, alongside readers; none may fail and none may be lost.
func updateConcurrently(t *testing.T, stores []*persistence.Accounts, id string, n int) {
	t.Helper()
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		s := stores[i%len(stores)]
		wg.Go(func() {
			_, err := s.UpdateAccount(ctx, id, func(a *domain.Account) error {
				a.Limits.Burst++
				return nil
			})
			errs <- err
		})
		wg.Go(func() {
			_, err := s.GetAccount(ctx, id)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	a, err := stores[0].GetAccount(ctx, id)
	require.NoError(t, err)
	require.Equal(t, n, a.Limits.Burst)
}

func TestAccounts_UpdateConcurrently(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		s := persistence.NewAccounts(db)
		a := newAccount("busy", t0)
		a.Limits.Burst = 0
		require.NoError(t, s.CreateAccount(t.Context(), a))
		updateConcurrently(t, []*persistence.Accounts{s}, a.ID, 20)
	})
}

// Two handles on one SQLite file stand for the server and a CLI command:
// they share no in-process semaphore, so BEGIN IMMEDIATE and the busy timeout
// alone must keep their writers from failing.
func TestAccounts_UpdateConcurrentlyTwoSQLiteHandles(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	var stores []*persistence.Accounts
	for range 2 {
		db, err := persistence.Open(t.Context(), url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		require.NoError(t, db.Migrate(t.Context()))
		stores = append(stores, persistence.NewAccounts(db))
	}
	a := newAccount("shared", t0)
	a.Limits.Burst = 0
	require.NoError(t, stores[0].CreateAccount(t.Context(), a))
	updateConcurrently(t, stores, a.ID, 20)
}

// Processes starting together on a fresh SQLite file (server and CLI) all
// migrate it; none may fail with "table already exists".
func TestMigrate_ConcurrentFreshSQLiteHandles(t *testing.T) {
	t.Parallel()
	for range 5 {
		url := "sqlite:" + filepath.Join(t.TempDir(), "fresh.db")
		var dbs []*persistence.DB
		for range 3 {
			db, err := persistence.Open(t.Context(), url)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			dbs = append(dbs, db)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(dbs))
		for i, db := range dbs {
			wg.Go(func() { errs[i] = db.Migrate(t.Context()) })
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
	}
}
