package persistence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/contenteval/contenteval/domain"
)

// TranslateError maps a driver error to a *domain.Error; it is the one place
// where driver errors meet the domain:
//
//	nil                                         -> nil
//	*domain.Error anywhere in the chain         -> err unchanged
//	sql.ErrNoRows                               -> NOT_FOUND
//	unique / primary key violation (23505)      -> ALREADY_EXISTS
//	foreign key violation (23503)               -> NOT_FOUND (a referenced row is missing)
//	serialization failure (40001), deadlock     -> ABORTED (retry the transaction)
//	SQLITE_BUSY, SQLITE_LOCKED, lock_not_available,
//	connection failures, server shutting down   -> UNAVAILABLE
//	storage faults: SQLITE_FULL, SQLITE_IOERR*,
//	SQLITE_READONLY*, SQLITE_CANTOPEN, class 53
//	(disk full, out of memory), class 58 (I/O)  -> UNAVAILABLE, saying which
//	context.Canceled, query canceled, interrupt -> CANCELED
//	context.DeadlineExceeded                    -> DEADLINE_EXCEEDED
//	anything else                               -> err unchanged (INTERNAL at the API)
//
// The message of the returned *domain.Error is generic and safe to show;
// stores replace it with a specific one ("account "x" not found"). The driver
// error is kept: errors.Is/As still find it, and Error() includes it for logs.
//
// A foreign key violation cannot be told apart on SQLite ("FOREIGN KEY
// constraint failed" for both an insert referencing a missing row and a
// delete of a row still referenced), so it is NOT_FOUND on both dialects; a
// store whose statement can only fail the second way relabels it
// FAILED_PRECONDITION.
func TranslateError(err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	if code, msg, ok := classify(err); ok {
		return &dbError{err: &domain.Error{Code: code, Message: msg}, cause: err}
	}
	return err
}

// Generic messages of translated errors.
const (
	msgNotFound      = "not found"
	msgAlreadyExists = "already exists"
	msgAborted       = "the operation conflicted with a concurrent one; retry it"
	msgUnavailable   = "the database is busy or unreachable; retry later"
	msgDiskFull      = "storage is unavailable: disk full"
	msgIOError       = "storage is unavailable: I/O error"
	msgReadOnly      = "storage is unavailable: the database is read-only"
	msgCantOpen      = "storage is unavailable: the database file cannot be opened"
	msgFileLost      = "storage is unavailable: the database file was deleted or replaced"
	msgOutOfMemory   = "the database is out of memory; retry later"
	msgCanceled      = "the request was canceled"
	msgDeadline      = "the request deadline was exceeded"
)

func classify(err error) (domain.Code, string, bool) {
	// Driver errors first: lib/pq may return a canceled-statement error that
	// also wraps the context error, and the driver code is more precise.
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return classifyPostgres(pqErr.SQLState())
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return classifySQLite(sqErr.Code())
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return domain.NotFound, msgNotFound, true
	case errors.Is(err, context.Canceled):
		return domain.Canceled, msgCanceled, true
	case errors.Is(err, context.DeadlineExceeded):
		return domain.DeadlineExceeded, msgDeadline, true
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		// lib/pq returns the socket's error (a *net.OpError, or a short
		// read) when the connection breaks mid-statement: it cannot say
		// ErrBadConn once the statement may have run.
		errors.Is(err, io.ErrUnexpectedEOF), isNetOpError(err):
		return domain.Unavailable, msgUnavailable, true
	}
	return 0, "", false
}

func isNetOpError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}

// classifyPostgres maps a PostgreSQL SQLSTATE
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
func classifyPostgres(state string) (domain.Code, string, bool) {
	switch state {
	case "23505": // unique_violation
		return domain.AlreadyExists, msgAlreadyExists, true
	case "23503": // foreign_key_violation
		return domain.NotFound, msgNotFound, true
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return domain.Aborted, msgAborted, true
	case "55P03", // lock_not_available
		"53300",          // too_many_connections
		"57P01", "57P02", // admin_shutdown, crash_shutdown
		"57P03", // cannot_connect_now
		"25006": // read_only_sql_transaction: a standby after failover
		return domain.Unavailable, msgUnavailable, true
	case "53100": // disk_full
		return domain.Unavailable, msgDiskFull, true
	case "53200": // out_of_memory
		return domain.Unavailable, msgOutOfMemory, true
	case "57014": // query_canceled (context canceled or statement_timeout)
		return domain.Canceled, msgCanceled, true
	}
	switch {
	case strings.HasPrefix(state, "08"): // connection_exception
		return domain.Unavailable, msgUnavailable, true
	case strings.HasPrefix(state, "53"): // insufficient_resources, the rest of it
		return domain.Unavailable, msgUnavailable, true
	case strings.HasPrefix(state, "58"): // system_error: io_error, undefined_file...
		return domain.Unavailable, msgIOError, true
	}
	return 0, "", false
}

// classifySQLite maps a SQLite extended result code
// (https://www.sqlite.org/rescode.html); the driver enables extended codes.
func classifySQLite(code int) (domain.Code, string, bool) {
	switch code {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return domain.AlreadyExists, msgAlreadyExists, true
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return domain.NotFound, msgNotFound, true
	}
	switch code & 0xff { // primary result code
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return domain.Unavailable, msgUnavailable, true
	case sqlite3.SQLITE_INTERRUPT: // the driver interrupts on context cancel
		return domain.Canceled, msgCanceled, true
	case sqlite3.SQLITE_FULL:
		return domain.Unavailable, msgDiskFull, true
	case sqlite3.SQLITE_IOERR:
		if code == sqlite3.SQLITE_IOERR_NOMEM {
			return domain.Unavailable, msgOutOfMemory, true
		}
		return domain.Unavailable, msgIOError, true
	case sqlite3.SQLITE_READONLY:
		if code == sqlite3.SQLITE_READONLY_DBMOVED {
			return domain.Unavailable, msgFileLost, true
		}
		return domain.Unavailable, msgReadOnly, true
	case sqlite3.SQLITE_CANTOPEN:
		return domain.Unavailable, msgCantOpen, true
	}
	return 0, "", false
}

// dbError is a translated driver error: the *domain.Error for the API and the
// driver error for logs and errors.Is/As.
type dbError struct {
	err   *domain.Error
	cause error
}

func (e *dbError) Error() string   { return e.err.Error() + ": " + e.cause.Error() }
func (e *dbError) Unwrap() []error { return []error{e.err, e.cause} }

// relabel gives a driver error translated to code from the code to and a
// specific client message, keeping its cause. It is how stores say which row
// was missing or duplicated. Anything else passes unchanged, in particular a
// *domain.Error that did not come from the driver (say, from the fn of
// UpdateAccount), so a store cannot rewrite its caller's errors.
func relabel(err error, from, to domain.Code, format string, args ...any) error {
	var dbe *dbError
	if !errors.As(err, &dbe) || dbe.err.Code != from {
		return err
	}
	return &dbError{err: &domain.Error{Code: to, Message: fmt.Sprintf(format, args...)}, cause: dbe.cause}
}

// describe replaces the generic message of a translated error of code c.
func describe(err error, c domain.Code, format string, args ...any) error {
	return relabel(err, c, c, format, args...)
}

// storageFault returns the client message of err when it is a storage
// fault, one that says the database cannot write (disk full, I/O error,
// read-only or unopenable file) rather than that it is busy; "" otherwise.
func storageFault(err error) string {
	_, msg, _ := classify(err)
	switch msg {
	case msgDiskFull, msgIOError, msgReadOnly, msgCantOpen, msgFileLost:
		return msg
	}
	return ""
}
