// Package persistence implements the store interfaces of package domain on
// PostgreSQL (github.com/lib/pq) and SQLite (modernc.org/sqlite) with sqlx and
// plain SQL, one file per entity.
//
// # Dialects
//
// SQL is written once with '?' placeholders and passed through DB.Rebind, so
// the same text runs on both dialects; dialect-specific SQL (SELECT ... FOR
// UPDATE, SKIP LOCKED) is chosen by DB.Dialect only where it is needed.
//
// # Time
//
// Timestamps round-trip as time.Time in UTC with microsecond precision on both
// dialects. PostgreSQL stores TIMESTAMPTZ (microseconds natively). SQLite
// stores INTEGER unix microseconds in columns declared TIMESTAMP: the driver
// is configured (_time_integer_format=unix_micro) to bind every time.Time
// parameter as that integer and (_inttotime=1) to scan it back as a UTC
// time.Time, so stores use plain time.Time on both dialects and ORDER BY
// (created, id) and range comparisons are numeric and correct. Migrations add
// CHECK (typeof(col) = 'integer') so a time written in any other form fails
// loudly instead of sorting wrongly. Values are truncated with StoredTime
// before writing because PostgreSQL rounds nanoseconds while SQLite truncates;
// a computed expression (max(created), COALESCE(...)) loses the column's
// declared type on SQLite and scans as int64, so select the column itself.
//
// # Writes and transactions
//
// Every write goes through DB.InTx. On SQLite the transaction begins
// IMMEDIATE (it takes the database write lock at BEGIN, so two transactions
// can never both read and then deadlock upgrading to write), and InTx first
// queues on an in-process writer semaphore that honours the context: writers
// in one process serialize in Go instead of spinning in SQLite's busy
// handler, while readers use the rest of the connection pool concurrently
// (WAL). Writers in other processes (the CLI beside a running server) wait up
// to the busy timeout (5 s) and then get UNAVAILABLE.
//
// # Errors
//
// TranslateError maps driver errors to *domain.Error at this boundary. The
// client-facing message never contains SQL or driver text; the driver error
// stays reachable with errors.Is/As and in Error() for logs.
//
// # Migrations
//
// Migrations are goose SQL files embedded per dialect under
// migrations/postgres and migrations/sqlite, named NNNNN_name.sql (00001,
// 00002, ...); the same number must exist in both directories. DB.Migrate
// applies the pending ones in order, each in its own transaction.
package persistence
