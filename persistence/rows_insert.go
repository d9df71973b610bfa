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
