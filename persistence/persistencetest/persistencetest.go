// Package persistencetest gives tests real, isolated, migrated databases: a
// fresh SQLite file always, and a fresh PostgreSQL schema when
// CONTENTEVAL_TEST_DATABASE_URL is set (required when CI=true). Repository
// conformance tests use Run so that every store passes the same tests on
// both backends; HTTP and CLI tests that need one database use Open.
package persistencetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"github.com/contenteval/contenteval/internal/testenv"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/contenteval/contenteval/persistence"
)

// EnvDatabaseURL names the environment variable holding the PostgreSQL URL
// tests run against, e.g.
// postgres://root@127.0.0.1:5432/test?sslmode=disable. The role needs
// CREATE on the database: each test creates and drops its own schema.
const EnvDatabaseURL = "CONTENTEVAL_TEST_DATABASE_URL"

// Backend names, as used by Open and as the subtest names of Run.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// pgMaxOpenConns bounds each test database's pool: parallel tests across
// parallel packages share one server (max_connections is 100 by default).
const pgMaxOpenConns = 4

// Backend is one database the conformance tests run on.
type Backend struct {
	// Name is SQLite or Postgres.
	Name string
	url  string
}

// Open returns a fresh database of this backend, migrated, private to t and
// removed when t ends.
func (b Backend) Open(t testing.TB) *persistence.DB {
	t.Helper()
	switch b.Name {
	case SQLite:
		return openSQLite(t, true)
	case Postgres:
		return openPostgres(t, b.url, true)
	}
	t.Fatalf("persistencetest: unknown backend %q", b.Name)
	return nil
}

// Backends returns SQLite, and PostgreSQL when CONTENTEVAL_TEST_DATABASE_URL
// is set. Under CI=true a missing URL fails t: CI must not pass by skipping
// PostgreSQL.
func Backends(t testing.TB) []Backend {
	t.Helper()
	bs := []Backend{{Name: SQLite}}
	if u, ok := postgresURL(t); ok {
		bs = append(bs, Backend{Name: Postgres, url: u})
	}
	return bs
}

// Run runs fn as one parallel subtest per backend ("sqlite", "postgres"),
// each with its own fresh migrated database. The subtests call t.Parallel,
// so fn must not, and Run returns before fn has run: put assertions in fn,
// not after Run.
func Run(t *testing.T, fn func(t *testing.T, db *persistence.DB)) {
	t.Helper()
	for _, b := range Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.Open(t))
		})
	}
}

// Open returns a fresh migrated database of the named backend (SQLite or
// Postgres), private to t. Postgres without CONTENTEVAL_TEST_DATABASE_URL
// skips t, or fails it under CI=true.
func Open(t testing.TB, backend string) *persistence.DB {
	t.Helper()
	switch backend {
	case SQLite:
		return openSQLite(t, true)
	case Postgres:
		return OpenPostgres(t, nil)
	}
	t.Fatalf("persistencetest: unknown backend %q", backend)
	return nil
}

// OpenUnmigrated is Backend.Open without the migrations: an empty
// database, for tests that migrate it step by step.
func (b Backend) OpenUnmigrated(t testing.TB) *persistence.DB {
	t.Helper()
	if b.Name == Postgres {
		return openPostgres(t, b.url, false)
	}
	return openSQLite(t, false)
}

// OpenPostgres is Open(t, Postgres) with extra connection URL parameters
// (say binary_parameters=no, to test the other side of a lib/pq option).
func OpenPostgres(t testing.TB, params url.Values) *persistence.DB {
	t.Helper()
	base, ok := postgresURL(t)
	if !ok {
		t.Skipf("persistencetest: %s not set", EnvDatabaseURL)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("persistencetest: %s is not a URL", EnvDatabaseURL)
	}
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return openPostgres(t, u.String(), true)
}

// postgresURL returns the test PostgreSQL URL, failing t when CI requires it.
func postgresURL(t testing.TB) (string, bool) {
	t.Helper()
	u := os.Getenv(EnvDatabaseURL)
	if u != "" {
		return u, true
	}
	if testenv.InCI() {
		t.Fatalf("persistencetest: CI=true but %s is not set; PostgreSQL tests must run in CI", EnvDatabaseURL)
	}
	return "", false
}

func openSQLite(t testing.TB, migrate bool) *persistence.DB {
	t.Helper()
	// TempDir is removed after the Cleanup below has closed the database.
	path := filepath.Join(t.TempDir(), "contenteval.db")
	db, err := persistence.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatalf("persistencetest: open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if !migrate {
		return db
	}
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("persistencetest: migrate sqlite: %v", err)
	}
	return db
}

// openPostgres creates schema ce_test_<random>, connects with search_path set
// to it (lib/pq sends unknown URL parameters as run-time parameters, so
// every pooled connection gets it), migrates it, and drops it with CASCADE
// when t ends. Tests in parallel thus never see each other's rows.
func openPostgres(t testing.TB, base string, migrate bool) *persistence.DB {
	t.Helper()
	ctx := t.Context()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("persistencetest: %s is not a URL", EnvDatabaseURL)
	}
	schema := "ce_test_" + randomHex(t, 8)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	db, err := persistence.Open(ctx, u.String())
	if err != nil {
		t.Fatalf("persistencetest: open postgres: %v", err)
	}
	db.SetMaxOpenConns(pgMaxOpenConns)
	db.SetMaxIdleConns(pgMaxOpenConns)
	// The schema name is ours ([a-z0-9_]), so it needs no quoting.
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = db.Close()
		t.Fatalf("persistencetest: create schema: %v", err)
	}
	t.Cleanup(func() {
		// t.Context() is already canceled when cleanups run.
		if _, err := db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("persistencetest: drop schema %s: %v", schema, err)
		}
		_ = db.Close()
	})
	// Guard against a driver that ignores search_path: the test would then
	// share (and its cleanup would not remove) the public schema's tables.
	var current string
	if err := db.GetContext(ctx, &current, "SELECT current_schema()"); err != nil || current != schema {
		t.Fatalf("persistencetest: search_path not applied: current_schema() = %q, %v", current, err)
	}
	if !migrate {
		return db
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("persistencetest: migrate postgres: %v", err)
	}
	return db
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("persistencetest: %v", err)
	}
	return hex.EncodeToString(b)
}
