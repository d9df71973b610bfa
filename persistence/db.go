package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"  // registers "postgres"
	_ "modernc.org/sqlite" // registers "sqlite"
)

// Dialect names the SQL database behind a DB.
type Dialect string

// The supported dialects. The values name the migration directories.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// SQLiteBusyTimeout is how long a SQLite statement waits for a lock held by
// another connection (in practice: another process) before it fails with
// SQLITE_BUSY, which TranslateError reports as UNAVAILABLE.
const SQLiteBusyTimeout = 5 * time.Second

// DB is a database handle of either dialect. The embedded *sqlx.DB is there
// for reads (GetContext, SelectContext with Rebind); writes go through InTx so
// that SQLite writers serialize (see the package comment).
type DB struct {
	*sqlx.DB
	Dialect Dialect

	// writeSem serializes InTx on SQLite within this process; nil on
	// PostgreSQL, where row locks do that job.
	writeSem chan struct{}
	// path is the SQLite database file; empty on PostgreSQL.
	path string
	// binaryParameters: lib/pq sends []byte arguments in binary format
	// (binary_parameters=yes, our default on PostgreSQL).
	binaryParameters bool
	// stmts caches prepared hot-path reads by their (rebound) text: SQLite
	// otherwise parses the SQL on every call, a fifth of a cheap request.
	stmts sync.Map // string -> *sqlx.Stmt
	// finishedJobs groups concurrent writes of finished synchronous jobs
	// into shared statements (Jobs.CreateFinishedJob); PostgreSQL only.
	finishedJobs *groupCommit[finishedWrite]
}

// prepared returns the cached prepared statement of query (written with ?).
func (db *DB) prepared(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if st, ok := db.stmts.Load(query); ok {
		return st.(*sqlx.Stmt), nil
	}
	st, err := db.PreparexContext(ctx, db.Rebind(query))
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.stmts.LoadOrStore(query, st); loaded {
		_ = st.Close()
		return prev.(*sqlx.Stmt), nil
	}
	return st, nil
}

// getPrepared is GetContext through the statement cache.
func (db *DB) getPrepared(ctx context.Context, dest any, query string, args ...any) error {
	st, err := db.prepared(ctx, query)
	if err != nil {
		return err
	}
	return st.GetContext(ctx, dest, args...)
}

// selectPrepared is SelectContext through the statement cache.
func (db *DB) selectPrepared(ctx context.Context, dest any, query string, args ...any) error {
	st, err := db.prepared(ctx, query)
	if err != nil {
		return err
	}
	return st.SelectContext(ctx, dest, args...)
}

// Open connects to url and pings it. url is postgres://... or
// postgresql://... (lib/pq; extra query parameters such as search_path are
// sent as run-time parameters) or sqlite:PATH (modernc.org/sqlite; the parent
// directory of PATH is created). The PostgreSQL session time zone is set to
// UTC unless url sets timezone. The returned error never contains url, which
// may hold a password.
func Open(ctx context.Context, url string) (*DB, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return openPostgres(ctx, url)
	case strings.HasPrefix(url, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(url, "sqlite:"))
	default:
		return nil, errors.New("persistence: unsupported database URL: want postgres://... or sqlite:PATH")
	}
}

// postgresPoolSize bounds the connections one process opens to PostgreSQL.
const postgresPoolSize = 20

func openPostgres(ctx context.Context, raw string) (*DB, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL; keep the password out of logs.
		return nil, errors.New("persistence: malformed PostgreSQL URL")
	}
	q := u.Query()
	// Times come back in the session time zone; UTC keeps them (and any
	// date_trunc on timestamptz, e.g. daily quotas) identical to SQLite.
	if q.Get("timezone") == "" && q.Get("TimeZone") == "" {
		q.Set("timezone", "UTC")
	}
	// A statement with arguments otherwise costs two round trips (Parse and
	// Describe, then Bind and Execute): lib/pq sends them in one with this
	// option. Its other effect, []byte arguments sent in binary format, is
	// what the BYTEA columns (the only []byte arguments) want.
	if q.Get("binary_parameters") == "" {
		q.Set("binary_parameters", "yes")
	}
	u.RawQuery = q.Encode()
	sqlDB, err := sql.Open("postgres", u.String())
	if err != nil {
		return nil, fmt.Errorf("persistence: open postgres: %w", err)
	}
	// An unbounded pool turns a traffic spike into "too many clients".
	// Idle connections are kept up to the same bound: with fewer, every
	// burst above the idle count closes connections that the next burst
	// reopens (a PostgreSQL backend fork and re-preparing the cached
	// statements each), which showed as the p99 of the jobs load test.
	sqlDB.SetMaxOpenConns(postgresPoolSize)
	sqlDB.SetMaxIdleConns(postgresPoolSize)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	db := &DB{DB: sqlx.NewDb(sqlDB, "postgres"), Dialect: Postgres, binaryParameters: q.Get("binary_parameters") == "yes"}
	db.finishedJobs = newFinishedJobsGroup(db)
	if err := db.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("persistence: connect to postgres: %w", err)
	}
	return db, nil
}

func openSQLite(ctx context.Context, path string) (*DB, error) {
	switch {
	case path == "":
		return nil, errors.New("persistence: sqlite URL has no path (want sqlite:PATH)")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		// Every pooled connection would get its own in-memory database, and
		// URI filenames would bypass the parameters below.
		return nil, errors.New("persistence: sqlite needs a plain file path (want sqlite:PATH)")
	case strings.ContainsRune(path, '?'):
		// The driver splits its DSN at the first '?'.
		return nil, errors.New("persistence: sqlite path must not contain '?'")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("persistence: create database directory: %w", err)
	}
	// Applied by the driver to every new connection:
	//   busy_timeout   wait for another process's lock instead of failing at once
	//   foreign_keys   SQLite enforces REFERENCES only when asked
	//   journal_mode   WAL: readers never block the writer and vice versa
	//   synchronous    NORMAL is durable across crashes in WAL, fsyncs less
	//   _txlock        BEGIN IMMEDIATE: take the write lock at BEGIN, so a
	//                  transaction never fails upgrading read->write
	//                  (SQLITE_BUSY_SNAPSHOT, which busy_timeout cannot fix);
	//                  read-only transactions still begin DEFERRED
	//   _time_integer_format, _inttotime: time.Time <-> INTEGER unix micros
	//                  in TIMESTAMP columns (package comment)
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", SQLiteBusyTimeout.Milliseconds()))
	params.Add("_pragma", "foreign_keys(1)")
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	params.Set("_txlock", "immediate")
	params.Set("_time_integer_format", "unix_micro")
	params.Set("_inttotime", "1")
	sqlDB, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return nil, fmt.Errorf("persistence: open sqlite: %w", err)
	}
	// Readers run in parallel on their own connections; writers are
	// serialized by writeSem, so the pool only bounds reader parallelism.
	n := max(4, runtime.GOMAXPROCS(0))
	sqlDB.SetMaxOpenConns(n)
	sqlDB.SetMaxIdleConns(n)
	// sqlx knows the '?' bindvar under the name "sqlite3", not "sqlite".
	db := &DB{DB: sqlx.NewDb(sqlDB, "sqlite3"), Dialect: SQLite, writeSem: make(chan struct{}, 1), path: path}
	if err := db.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("persistence: open sqlite database: %w", err)
	}
	return db, nil
}

// Ping checks that the database answers. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED; other failures are returned untranslated.
func (db *DB) Ping(ctx context.Context) error {
	return TranslateError(db.PingContext(ctx))
}

// Close closes every connection of the pool.
func (db *DB) Close() error {
	return db.DB.Close()
}

// InTx runs fn in a transaction and commits it when fn returns nil. It rolls
// back when fn returns an error or panics (the panic continues after the
// rollback). The error of fn is returned through TranslateError, so a
// *domain.Error from fn is returned unchanged.
//
// On PostgreSQL the transaction is READ COMMITTED (the server default): a
// read-modify-write locks its rows (SELECT ... FOR UPDATE) or guards its
// UPDATE with a WHERE on the expected state.
//
// On SQLite, InTx first waits (honouring ctx) for the in-process writer slot
// and then BEGINs IMMEDIATE; so InTx must not be nested, and fn must use tx,
// never db, for writes: a write on another connection would wait on the lock
// fn's own transaction holds. Codes: whatever fn returns; UNAVAILABLE
// (database busy or unreachable), ABORTED (serialization failure or deadlock
// at commit), CANCELED, DEADLINE_EXCEEDED.
func (db *DB) InTx(ctx context.Context, fn func(tx *sqlx.Tx) error) (err error) {
	if db.writeSem != nil {
		select {
		case db.writeSem <- struct{}{}:
		case <-ctx.Done():
			return TranslateError(ctx.Err())
		}
		defer func() { <-db.writeSem }()
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return TranslateError(err)
	}
	done := false
	defer func() {
		// Runs on error returns and while panicking; the panic is not
		// recovered, so it still reaches the caller (and the test runner).
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return TranslateError(err)
	}
	done = true
	if err := tx.Commit(); err != nil {
		return TranslateError(err)
	}
	return nil
}

// forUpdate is the row-lock suffix for a SELECT that precedes an UPDATE in
// the same transaction. SQLite has no row locks and needs none: InTx already
// holds the database write lock.
func (db *DB) forUpdate() string {
	if db.Dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// StoredTime returns t as the database stores it: UTC, truncated to the
// microsecond. Stores apply it before writing, and callers comparing a
// written value with a read one apply it too. Truncating (not rounding)
// matters: PostgreSQL would round nanoseconds, SQLite would truncate.
func StoredTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// storedTimePtr is StoredTime for a nullable column.
func storedTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	s := StoredTime(*t)
	return &s
}

// utcPtr normalizes a scanned nullable time to UTC.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
