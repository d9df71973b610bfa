package persistence

// Multi-row INSERTs built from rows of arguments: the unit in which job rows
// and job outcomes (results, label hits) are written, rendered as VALUES
// lists in transactions (execInserts) or as column arrays for
// job_finish_postgres.go (pg_arrays.go).

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"
)

// rowsInsert is a multi-row INSERT not yet rendered: a table, its column
// list and the arguments of each row (all of len(columns)).
type rowsInsert struct {
	table   string
	columns []string
	rows    [][]any
}

// maxStatementArgs bounds the bind arguments of one statement: below both
// PostgreSQL's protocol limit (65,535) and SQLite's default (32,766).
const maxStatementArgs = 30000

// sql renders rows[from:to] of in with ? placeholders.
func (in rowsInsert) sql(from, to int) (string, []any) {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(in.table)
	b.WriteString(" (")
	b.WriteString(strings.Join(in.columns, ", "))
	b.WriteString(") VALUES ")
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(in.columns)), ", ") + ")"
	args := make([]any, 0, (to-from)*len(in.columns))
	for i := from; i < to; i++ {
		if i > from {
			b.WriteString(", ")
		}
		b.WriteString(row)
		args = append(args, in.rows[i]...)
	}
	return b.String(), args
}

// execRows writes in's rows in tx, each row followed by suffix (an ON
// CONFLICT clause, or ""). SQLite runs one single-row statement per row,
// prepared once per connection when warmWrites has cached it (parsing a
// statement on every write was a fifth of a synchronous job's CPU), else
// prepared for this transaction; PostgreSQL runs multi-row statements, one
// round trip each.
func (db *DB) execRows(ctx context.Context, tx *sqlx.Tx, in rowsInsert, suffix string) error {
	if len(in.rows) == 0 {
		return nil
	}
	if db.Dialect != SQLite {
		per := max(1, maxStatementArgs/len(in.columns))
		for from := 0; from < len(in.rows); from += per {
			q, args := in.sql(from, min(from+per, len(in.rows)))
			if _, err := tx.ExecContext(ctx, tx.Rebind(q+suffix), args...); err != nil {
				return err
			}
		}
		return nil
	}
	q := in.rowSQL() + suffix
	var st *sqlx.Stmt
	if cached, ok := db.stmts.Load(q); ok {
		st = tx.StmtxContext(ctx, cached.(*sqlx.Stmt))
	} else {
		p, err := tx.PreparexContext(ctx, q)
		if err != nil {
			return err
		}
		defer p.Close()
		st = p
	}
	for _, r := range in.rows {
		if _, err := st.ExecContext(ctx, r...); err != nil {
			return err
		}
	}
	return nil
}

// rowSQL is the INSERT of one row of in's table and columns.
func (in rowsInsert) rowSQL() string {
	return "INSERT INTO " + in.table + " (" + strings.Join(in.columns, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(in.columns)), ", ") + ")"
}

// warmWrites prepares the single-row statements of a job's write on SQLite
// (execRows), once. It must run outside a transaction: preparing takes a
// pool connection, and a new SQLite connection's setup waits for the write
// lock the transaction would hold.
func (db *DB) warmWrites(ctx context.Context) {
	if db.Dialect != SQLite || db.writesWarm.Load() {
		return
	}
	for _, q := range []string{
		rowsInsert{table: "jobs", columns: jobInsertColumns}.rowSQL(),
		rowsInsert{table: "job_results", columns: resultInsertColumns}.rowSQL(),
		rowsInsert{table: "label_hits", columns: hitInsertColumns}.rowSQL(),
		dayCounts.rowSQL(), hourCounts.rowSQL(),
	} {
		if _, err := db.prepared(ctx, q); err != nil {
			return // execRows prepares per transaction meanwhile
		}
	}
	db.writesWarm.Store(true)
}

// execEach runs execRows of each of ins in order (no suffix).
func (db *DB) execEach(ctx context.Context, tx *sqlx.Tx, ins []rowsInsert) error {
	for _, in := range ins {
		if err := db.execRows(ctx, tx, in, ""); err != nil {
			return err
		}
	}
	return nil
}

// execInserts runs ins in order in tx (one without rows writes nothing),
// each in statements of at most maxStatementArgs arguments.
func execInserts(ctx context.Context, tx *sqlx.Tx, ins []rowsInsert) error {
	for _, in := range ins {
		per := max(1, maxStatementArgs/len(in.columns))
		for from := 0; from < len(in.rows); from += per {
			q, args := in.sql(from, min(from+per, len(in.rows)))
			if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
				return err
			}
		}
	}
	return nil
}
