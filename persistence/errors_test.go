package persistence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func TestTranslateError(t *testing.T) {
	t.Parallel()
	domainErr := domain.Errorf(domain.FailedPrecondition, "already translated")
	plain := errors.New("something else")
	syntax := &pq.Error{Code: "42601", Message: "syntax error at or near \"SELEC\""}
	tests := []struct {
		name string
		err  error
		want domain.Code // OK: err must come back unchanged
	}{
		{"no rows", sql.ErrNoRows, domain.NotFound},
		{"wrapped no rows", fmt.Errorf("get: %w", sql.ErrNoRows), domain.NotFound},
		{"context canceled", context.Canceled, domain.Canceled},
		{"context deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), domain.DeadlineExceeded},
		{"bad connection", driver.ErrBadConn, domain.Unavailable},
		{"connection done", sql.ErrConnDone, domain.Unavailable},
		{"pg unique violation", &pq.Error{Code: "23505"}, domain.AlreadyExists},
		{"pg foreign key violation", &pq.Error{Code: "23503"}, domain.NotFound},
		{"pg serialization failure", &pq.Error{Code: "40001"}, domain.Aborted},
		{"pg deadlock", fmt.Errorf("commit: %w", &pq.Error{Code: "40P01"}), domain.Aborted},
		{"pg lock not available", &pq.Error{Code: "55P03"}, domain.Unavailable},
		{"pg connection failure", &pq.Error{Code: "08006"}, domain.Unavailable},
		{"pg shutting down", &pq.Error{Code: "57P01"}, domain.Unavailable},
		{"pg too many connections", &pq.Error{Code: "53300"}, domain.Unavailable},
		{"pg query canceled", &pq.Error{Code: "57014"}, domain.Canceled},
		{"pg syntax error is untouched", syntax, domain.OK},
		{"plain error is untouched", plain, domain.OK},
		{"domain error is untouched", domainErr, domain.OK},
		{"wrapped domain error is untouched", fmt.Errorf("x: %w", domainErr), domain.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := persistence.TranslateError(tt.err)
			if tt.want == domain.OK {
				require.Equal(t, tt.err, got)
				return
			}
			requireCode(t, got, tt.want)
			require.ErrorIs(t, got, tt.err, "the driver error stays reachable")
			require.Contains(t, got.Error(), tt.err.Error(), "Error() keeps the cause for logs")
			var pqErr *pq.Error
			require.Equal(t, errors.As(tt.err, &pqErr), errors.As(got, &pqErr))
		})
	}
	require.NoError(t, persistence.TranslateError(nil))
}

// Real driver errors of both dialects translate the same way.
func TestTranslateError_Drivers(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		insertAccount := db.Rebind(`INSERT INTO accounts (id, name, type, created, updated) VALUES (?, 'n', 'label-first', ?, ?)`)
		insertKey := db.Rebind(`INSERT INTO api_keys (id, account_id, created) VALUES (?, ?, ?)`)
		_, err := db.ExecContext(ctx, insertAccount, "a", t0, t0)
		require.NoError(t, err)

		tests := []struct {
			name  string
			query string
			args  []any
			want  domain.Code
		}{
			{"primary key", insertAccount, []any{"a", t0, t0}, domain.AlreadyExists},
			{"foreign key", insertKey, []any{"k", "missing", t0}, domain.NotFound},
			{"not null is internal", db.Rebind(`INSERT INTO accounts (id) VALUES (?)`), []any{"b"}, domain.Internal},
			{"syntax is internal", "SELEC 1", nil, domain.Internal},
		}
		for _, tt := range tests {
			_, err := db.ExecContext(ctx, tt.query, tt.args...)
			got := persistence.TranslateError(err)
			if tt.want == domain.Internal {
				require.Error(t, got, tt.name)
				require.Equal(t, err, got, tt.name)
				require.Equal(t, domain.Internal, domain.ErrorCode(got), tt.name)
				require.Equal(t, "internal error", domain.ErrorMessage(got), tt.name)
				continue
			}
			requireCode(t, got, tt.want)
		}

		var n int
		err = db.GetContext(ctx, &n, db.Rebind(`SELECT 1 FROM accounts WHERE id = ?`), "none")
		requireCode(t, persistence.TranslateError(err), domain.NotFound)

		canceled, cancel := context.WithCancel(ctx)
		cancel()
		_, err = db.ExecContext(canceled, `SELECT 1`)
		requireCode(t, persistence.TranslateError(err), domain.Canceled)
	})
}

// A writer in another process holding the lock past the busy timeout gives
// UNAVAILABLE. The second handle's busy timeout is cut to 0 so the test
// does not wait 5 s.
func TestTranslateError_SQLiteBusy(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "busy.db")
	holder, err := persistence.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close() })
	require.NoError(t, holder.Migrate(t.Context()))
	other, err := persistence.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	other.SetMaxOpenConns(1) // so the pragma below applies to the conn used next
	_, err = other.ExecContext(t.Context(), "PRAGMA busy_timeout = 0")
	require.NoError(t, err)

	tx, err := holder.BeginTxx(t.Context(), nil) // BEGIN IMMEDIATE: holds the write lock
	require.NoError(t, err)
	defer tx.Rollback()

	err = persistence.NewAccounts(other).CreateAccount(t.Context(), newAccount("y", t0))
	requireCode(t, err, domain.Unavailable)
}

// A PostgreSQL serialization failure is ABORTED: the caller may retry.
func TestTranslateError_PostgresSerialization(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	ctx := t.Context()
	s := persistence.NewAccounts(db)
	require.NoError(t, s.CreateAccount(ctx, newAccount("a", t0)))

	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, err)
	defer tx.Rollback()
	var name string
	require.NoError(t, tx.GetContext(ctx, &name, `SELECT name FROM accounts WHERE id = 'a'`)) // takes the snapshot

	_, err = db.ExecContext(ctx, `UPDATE accounts SET name = 'concurrent' WHERE id = 'a'`)
	require.NoError(t, err)

	_, err = tx.ExecContext(ctx, `UPDATE accounts SET name = 'mine' WHERE id = 'a'`)
	requireCode(t, persistence.TranslateError(err), domain.Aborted)
}
