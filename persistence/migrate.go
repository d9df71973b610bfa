package persistence

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrations holds one directory of goose SQL files per dialect. A change
// adds NNNNN_name.sql with the next number to BOTH directories.
//
//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// Migrate applies every pending migration of db's dialect in version order,
// each in its own transaction; it does nothing when the schema is current.
//
// Concurrent Migrate calls on one database take turns, because goose reads
// the applied versions before it applies the next one (two migrators would
// both apply version N and one would fail). On PostgreSQL it holds a session
// advisory lock keyed by the current schema, so replicas starting together
// migrate one at a time while test schemas in one database do not wait for
// each other. On SQLite it holds an flock on PATH-migrate.lock (Unix only),
// so a CLI command and the server starting on a fresh file do the same. It
// uses a goose Provider, never goose's package-level state.
func (db *DB) Migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrations, "migrations/"+string(db.Dialect))
	if err != nil {
		return fmt.Errorf("persistence: migrations for %s: %w", db.Dialect, err)
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	dialect := goose.DialectSQLite3
	if db.Dialect == SQLite {
		unlock, err := lockFile(ctx, db.path+"-migrate.lock")
		if err != nil {
			return fmt.Errorf("persistence: migrate: lock: %w", TranslateError(err))
		}
		defer unlock()
	}
	if db.Dialect == Postgres {
		dialect = goose.DialectPostgres
		var schema string
		if err := db.GetContext(ctx, &schema, "SELECT current_schema()"); err != nil {
			return fmt.Errorf("persistence: migrate: %w", TranslateError(err))
		}
		h := fnv.New64a()
		h.Write([]byte("contenteval/migrate/" + schema))
		locker, err := lock.NewPostgresSessionLocker(
			lock.WithLockID(int64(h.Sum64())),
			// Poll every second for up to 5 minutes (default: every 5 s),
			// so a replica waiting for another one's migrations starts soon
			// after they finish.
			lock.WithLockTimeout(1, 300),
		)
		if err != nil {
			return fmt.Errorf("persistence: migrate: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, db.DB.DB, fsys, opts...)
	if err != nil {
		return fmt.Errorf("persistence: migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("persistence: migrate: %w", err)
	}
	return nil
}
