package persistence

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/contenteval/contenteval/tracing"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"  // registers "postgres"
	_ "modernc.org/sqlite" // registers "sqlite"

	"github.com/contenteval/contenteval/domain"
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
	path     string // the SQLite database file; empty on PostgreSQL
	// binaryParameters: lib/pq sends []byte arguments in binary format
	// (binary_parameters=yes, our default on PostgreSQL).
	binaryParameters bool
	// stmts caches prepared hot-path reads by their (rebound) text: SQLite
	// otherwise parses the SQL on every call, a fifth of a cheap request.
	stmts sync.Map // string -> *sqlx.Stmt
	// writesWarm: warmWrites has cached the statements of a job's write.
	writesWarm atomic.Bool
	// finishedJobs groups concurrent writes of finished synchronous jobs
	// into shared statements (Jobs.CreateFinishedJob); PostgreSQL only.
	finishedJobs *groupCommit[finishedWrite]

	// file is the SQLite database file as opened, and wal whether its
	// write-ahead log has been seen: checkFile compares them with what the
	// paths name now.
	file os.FileInfo
	wal  atomic.Bool
	// checked is when checkFile last passed (unix nanoseconds); a write
	// checks again only once checkEvery has gone by since.
	checked    atomic.Int64
	checkEvery time.Duration
	// lost is set once the SQLite file was found deleted or replaced. It
	// stays set: the open descriptors write to an inode nobody will read
	// again, and only a restart (on a restored file) can help.
	lost atomic.Bool
	// fault is the client message of the last storage fault a write met
	// (disk full, I/O error), held until a probe write succeeds; nil when
	// there is none. It is what makes Ready fail while reads still work.
	fault atomic.Pointer[string]
	// secrets seals webhook secrets at rest; nil until
	// EncryptSecretsWith (then they are stored as given).
	secrets *secretBox
	// secretsKey is the server key secrets and content are sealed with.
	secretsKey ed25519.PrivateKey
	// content seals review items' content; nil until EncryptSecretsWith.
	content *contentBox
	// review caches the review queues routing reads (review_routing.go).
	review reviewRoutes
	// reviewBlobs keeps review content that is not text (review_media.go).
	reviewBlobs atomic.Pointer[domain.BlobStore]
	queueFloor  queueFloorState // the job queue's floor (job_queue_floor.go)
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
	sqlDB, err := tracing.OpenDB("postgres", u.String(), "postgresql")
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
	// The grouped writes bypass InTx; their storage faults count too.
	exec := db.finishedJobs.exec
	db.finishedJobs.exec = func(ctx context.Context, ws []finishedWrite) error {
		err := exec(ctx, ws)
		db.noteFault(err)
		return err
	}
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
	// The database holds secrets and customer content: owner only.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("persistence: create database directory: %w", err)
	}
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	// Applied by the driver to every new connection:
	//   busy_timeout   wait for another process's lock instead of failing at once
	//   foreign_keys   SQLite enforces REFERENCES only when asked
	//   journal_mode   WAL: readers never block the writer and vice versa
	//   synchronous    NORMAL is durable across crashes in WAL, fsyncs less
	//   auto_vacuum    INCREMENTAL: expiry gives freed pages back a few at a
	//                  time (Retention.Compact); takes effect on a new file,
	//                  and on an old one at the VACUUM of migration 00094
	//   _txlock        BEGIN IMMEDIATE: take the write lock at BEGIN, so a
	//                  transaction never fails upgrading read->write
	//                  (SQLITE_BUSY_SNAPSHOT, which busy_timeout cannot fix);
	//                  read-only transactions still begin DEFERRED
	//   _time_integer_format, _inttotime: time.Time <-> INTEGER unix micros
	//                  in TIMESTAMP columns (package comment)
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", SQLiteBusyTimeout.Milliseconds()))
	params.Add("_pragma", "foreign_keys(1)")
	params.Add("_pragma", "auto_vacuum(INCREMENTAL)")
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	params.Set("_txlock", "immediate")
	params.Set("_time_integer_format", "unix_micro")
	params.Set("_inttotime", "1")
	sqlDB, err := tracing.OpenDB("sqlite", path+"?"+params.Encode(), "sqlite")
	if err != nil {
		return nil, fmt.Errorf("persistence: open sqlite: %w", err)
	}
	// Readers run in parallel on their own connections; writers are
	// serialized by writeSem, so the pool only bounds reader parallelism.
	n := max(4, runtime.GOMAXPROCS(0))
	sqlDB.SetMaxOpenConns(n)
	sqlDB.SetMaxIdleConns(n)
	// sqlx knows the '?' bindvar under the name "sqlite3", not "sqlite".
	db := &DB{DB: sqlx.NewDb(sqlDB, "sqlite3"), Dialect: SQLite, writeSem: make(chan struct{}, 1), path: path,
		checkEvery: fileCheckEvery}
	if err := db.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("persistence: open sqlite database: %w", err)
	}
	if db.file, err = os.Stat(path); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("persistence: open sqlite database: %w", err)
	}
	return db, nil
}

// createPrivate creates the SQLite file 0600 before the driver opens it:
// SQLite would create it 0644 (less the umask), and it gives the -wal and
// -shm files the mode of the database file. A file left wider by an
// earlier version is narrowed, best effort (a file owned by someone else
// stays as it is, and SQLite reports what it cannot open).
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("persistence: create database file: %w", err)
	}
	_ = f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(p, fi.Mode().Perm()&0o700)
		}
	}
	return nil
}

// fileCheckEvery is how stale a write lets the last check of the SQLite
// file be. Two stat calls per write cost a tenth to a third of a small
// write transaction on a loaded machine (BenchmarkCheckFile against
// BenchmarkInTxSQLite); this bounds them to ten a second, and the writes
// of the first tenth of a second after a loss (a deleted directory is
// noticed by a person, not a process, in far more) are the price. Ready
// checks every time.
const fileCheckEvery = 100 * time.Millisecond

// errFileLost is the cause of the UNAVAILABLE error of a lost SQLite file.
var errFileLost = errors.New("persistence: the sqlite database file or its write-ahead log was deleted or replaced since it was opened")

// checkFile reports UNAVAILABLE when the SQLite file is no longer the one
// opened: deleted, replaced or its directory removed. Writes would land in
// the deleted inode and vanish at exit. Two stat calls, which writes make
// at most every fileCheckEvery (checkFileOften). The log is checked for existence
// only, once seen (SQLite creates it with the first transaction): SQLite
// itself deletes and recreates it when the last connection of a process
// closes, and the inode changing then is no loss, while the pool keeps its
// connections open.
func (db *DB) checkFile() error {
	if db.file == nil {
		return nil
	}
	if !db.lost.Load() {
		fi, err := os.Stat(db.path)
		ok := err == nil && os.SameFile(fi, db.file)
		if ok {
			_, err = os.Stat(db.path + "-wal")
			if err == nil {
				db.wal.Store(true)
			} else {
				ok = !db.wal.Load()
			}
		}
		if ok {
			db.checked.Store(time.Now().UnixNano())
			return nil
		}
		db.lost.Store(true)
	}
	return &dbError{err: &domain.Error{Code: domain.Unavailable, Message: msgFileLost}, cause: errFileLost}
}

// checkFileOften is checkFile for writes: skipped while the last check
// is younger than checkEvery, unless the file is known lost.
func (db *DB) checkFileOften() error {
	if db.file == nil {
		return nil
	}
	if !db.lost.Load() && time.Now().UnixNano()-db.checked.Load() < int64(db.checkEvery) {
		return nil
	}
	return db.checkFile()
}

// noteFault remembers err when it is a storage fault, so Ready fails until
// a probe write succeeds.
func (db *DB) noteFault(err error) {
	if err == nil {
		return
	}
	if msg := storageFault(err); msg != "" {
		db.fault.Store(&msg)
	}
}

// probeBytes is the size of the probe write: several pages, so that it
// needs new space and not only a rewrite in place. On PostgreSQL the new
// TOAST chunks need the relation extended (the dead ones are reusable only
// after a vacuum); on SQLite the write-ahead log grows by as much.
const probeBytes = 16 << 10

// Ready reports whether the database can take writes: it answers (Ping),
// its SQLite file is still the one opened, and, after a write met a storage
// fault, a probe write of probeBytes (storage_probe, one row) succeeds; the
// fault is forgotten then. Without a fault no write is made, so Ready
// costs a ping. The probe is a fair test, not a proof: SQLite reuses the
// pages the previous probe freed, so it finds a full disk only when the
// write-ahead log must grow (it must, until a checkpoint resets it); a
// write that fails again brings the fault back. Codes: UNAVAILABLE (the
// message says which fault), CANCELED, DEADLINE_EXCEEDED.
func (db *DB) Ready(ctx context.Context) error {
	if err := db.checkFile(); err != nil {
		return err
	}
	if err := db.Ping(ctx); err != nil {
		return err
	}
	fault := db.fault.Load()
	if fault == nil {
		return nil
	}
	payload := make([]byte, probeBytes)
	_, _ = rand.Read(payload) // incompressible, so PostgreSQL stores every byte
	// An upsert, so that concurrent probes wait for each other instead of
	// colliding on the key.
	err := db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO storage_probe (id, payload) VALUES (1, ?)
			ON CONFLICT (id) DO UPDATE SET payload = excluded.payload`), payload)
		return err
	})
	if err != nil {
		if domain.ErrorCode(err) == domain.Unavailable {
			return err
		}
		// Any other failure of the probe (say, the table missing under
		// --no-migrate) must not pass for the fault being over.
		return &dbError{err: &domain.Error{Code: domain.Unavailable, Message: *fault}, cause: err}
	}
	db.fault.CompareAndSwap(fault, nil)
	return nil
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
// (database busy or unreachable, a storage fault, the SQLite file lost:
// see Ready), ABORTED (serialization failure or deadlock
// at commit), CANCELED, DEADLINE_EXCEEDED.
func (db *DB) InTx(ctx context.Context, fn func(tx *sqlx.Tx) error) (err error) {
	defer func() { db.noteFault(err) }()
	if db.writeSem != nil {
		select {
		case db.writeSem <- struct{}{}:
		case <-ctx.Done():
			return TranslateError(ctx.Err())
		}
		defer func() { <-db.writeSem }()
		if err := db.checkFileOften(); err != nil {
			return err
		}
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

// forShare is forUpdate for a row that must only stay as it is until
// the transaction ends.
func (db *DB) forShare() string {
	if db.Dialect == Postgres {
		return " FOR SHARE"
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
