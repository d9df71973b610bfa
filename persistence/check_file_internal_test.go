package persistence

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// BenchmarkCheckFile is the cost checkFile adds to every SQLite write
// transaction; BenchmarkInTxSQLite is such a transaction, for scale.
func BenchmarkCheckFile(b *testing.B) {
	db := benchSQLite(b)
	for b.Loop() {
		if err := db.checkFile(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInTxSQLite(b *testing.B) {
	db := benchSQLite(b)
	for b.Loop() {
		err := db.InTx(b.Context(), func(tx *sqlx.Tx) error {
			_, err := tx.ExecContext(b.Context(), `INSERT OR REPLACE INTO storage_probe (id, payload) VALUES (1, x'00')`)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchSQLite(b testing.TB) *DB {
	b.Helper()
	db, err := Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkCheckFileOften is what a write pays between checks.
func BenchmarkCheckFileOften(b *testing.B) {
	db := benchSQLite(b)
	for b.Loop() {
		if err := db.checkFileOften(); err != nil {
			b.Fatal(err)
		}
	}
}

// A write alone (no Ready before it) notices the lost file once the last
// check is stale, and from then on every write fails without looking.
func TestInTx_NoticesLostFile(t *testing.T) {
	t.Parallel()
	db := benchSQLite(t)
	write := func() error {
		return db.InTx(t.Context(), func(tx *sqlx.Tx) error {
			_, err := tx.ExecContext(t.Context(), `INSERT OR REPLACE INTO storage_probe (id, payload) VALUES (1, x'00')`)
			return err
		})
	}
	db.checkEvery = time.Hour
	if err := write(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(db.path); err != nil {
		t.Fatal(err)
	}
	if err := write(); err != nil {
		t.Fatalf("within checkEvery the write does not look: %v", err)
	}
	db.checked.Store(0) // the last check is now stale
	for range 2 {
		err := write()
		if domain.ErrorCode(err) != domain.Unavailable || domain.ErrorMessage(err) != msgFileLost {
			t.Fatalf("write after the loss: %v", err)
		}
	}
}
