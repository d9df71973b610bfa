package persistence

import (
	"context"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/jmoiron/sqlx"
)

// HashLists implements domain.HashListStore.
type HashLists struct{ db *DB }

var _ domain.HashListStore = (*HashLists)(nil)

// NewHashLists returns the hash-list store.
func NewHashLists(db *DB) *HashLists { return &HashLists{db: db} }

// insertBatch bounds one multi-row INSERT (SQLite allows 32766 parameters).
const insertBatch = 500

// ImportHashList replaces (or creates) the list named l.Name in one
// transaction. Duplicate hashes within a file are kept once. Codes:
// INVALID_ARGUMENT from entries; UNAVAILABLE.
func (s *HashLists) ImportHashList(ctx context.Context, l *domain.HashList, entries func(yield func(domain.HashListEntry) error) error) error {
	l.Created = StoredTime(l.Created)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_list_entries WHERE list_id IN (SELECT id FROM hash_lists WHERE account_id = '' AND name = ?)`), l.Name); err != nil {
			return TranslateError(err)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_lists WHERE account_id = '' AND name = ?`), l.Name); err != nil {
			return TranslateError(err)
		}
		if l.Mode == "" {
			l.Mode = domain.HashListEnforce
		}
		if l.FloodLimit == 0 {
			l.FloodLimit = domain.DefaultFloodLimit
		}
		l.Updated = l.Created
		b := bandColumns(l.Bands)
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO hash_lists (id, account_id, name, kind, count, created, mode, band_exact, band_high, band_medium, band_low, flood_limit, updated)
			VALUES (?, '', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)`),
			l.ID, l.Name, string(l.Kind), l.Created, string(l.Mode), b[0], b[1], b[2], b[3], l.FloodLimit, l.Created); err != nil {
			return TranslateError(err)
		}
		var batch []domain.HashListEntry
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			q := strings.Builder{}
			q.WriteString(`INSERT INTO hash_list_entries (list_id, hash, quality, source, note, created) VALUES `)
			args := make([]any, 0, 6*len(batch))
			for i, e := range batch {
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, ?, ?)")
				args = append(args, l.ID, e.Hex, e.Quality, e.Source, e.Note, l.Created)
			}
			q.WriteString(` ON CONFLICT (list_id, hash) DO NOTHING`)
			batch = batch[:0]
			_, err := tx.ExecContext(ctx, tx.Rebind(q.String()), args...)
			return TranslateError(err)
		}
		err := entries(func(e domain.HashListEntry) error {
			batch = append(batch, e)
			if len(batch) >= insertBatch {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &l.Count, tx.Rebind(`SELECT COUNT(*) FROM hash_list_entries WHERE list_id = ?`), l.ID); err != nil {
			return TranslateError(err)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE hash_lists SET count = ? WHERE id = ?`), l.Count, l.ID); err != nil {
			return TranslateError(err)
		}
		_, err = tx.ExecContext(ctx, `UPDATE hash_lists_generation SET generation = generation + 1 WHERE id = 1`)
		return TranslateError(err)
	})
}

// ListHashLists returns every operator-wide list by name. Codes: UNAVAILABLE.
func (s *HashLists) ListHashLists(ctx context.Context) ([]*domain.HashList, error) {
	return s.selectLists(ctx, `WHERE account_id = '' ORDER BY name`)
}

// DeleteHashList removes a list and its entries. Codes: NOT_FOUND.
func (s *HashLists) DeleteHashList(ctx context.Context, name string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var id string
		if err := tx.GetContext(ctx, &id, tx.Rebind(`SELECT id FROM hash_lists WHERE account_id = '' AND name = ?`), name); err != nil {
			return describe(TranslateError(err), domain.NotFound, "hash list %q not found", name)
		}
		// Entries first: SQLite enforces ON DELETE CASCADE only with
		// foreign_keys on, and deleting them explicitly costs nothing.
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_list_entries WHERE list_id = ?`), id); err != nil {
			return TranslateError(err)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_list_hits WHERE list_id = ?`), id); err != nil {
			return TranslateError(err)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_lists WHERE id = ?`), id); err != nil {
			return TranslateError(err)
		}
		_, err := tx.ExecContext(ctx, `UPDATE hash_lists_generation SET generation = generation + 1 WHERE id = 1`)
		return TranslateError(err)
	})
}

// HashListsGeneration returns the change counter. Codes: UNAVAILABLE.
func (s *HashLists) HashListsGeneration(ctx context.Context) (int64, error) {
	var g int64
	err := s.db.GetContext(ctx, &g, `SELECT generation FROM hash_lists_generation WHERE id = 1`)
	return g, TranslateError(err)
}

// EachHashEntry streams every entry with its list id. Codes: UNAVAILABLE.
func (s *HashLists) EachHashEntry(ctx context.Context, fn func(listID string, kind domain.HashKind, e domain.HashListEntry) error) error {
	rows, err := s.db.QueryxContext(ctx, `
		SELECT l.id, l.kind, e.hash, e.quality, e.state
		FROM hash_list_entries e JOIN hash_lists l ON l.id = e.list_id
		ORDER BY l.id, e.hash`)
	if err != nil {
		return TranslateError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, kind, hash, state string
		var quality int
		if err := rows.Scan(&id, &kind, &hash, &quality, &state); err != nil {
			return TranslateError(err)
		}
		if err := fn(id, domain.HashKind(kind), domain.HashListEntry{Hex: hash, Quality: quality, State: domain.HashState(state)}); err != nil {
			return err
		}
	}
	return TranslateError(rows.Err())
}

// RecordMatch writes an audit record. Codes: UNAVAILABLE.
func (s *HashLists) RecordMatch(ctx context.Context, m *domain.PrecheckMatch) error {
	m.Created = StoredTime(m.Created)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`
			INSERT INTO precheck_matches (id, account_id, job_id, list_name, kind, confidence, distance, created)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
			m.ID, m.AccountID, m.JobID, m.List, string(m.Kind), string(m.Confidence), m.Distance, m.Created)
		return TranslateError(err)
	})
}

// ListMatches returns an account's audit records, newest first. Codes:
// UNAVAILABLE.
func (s *HashLists) ListMatches(ctx context.Context, accountID string, limit int) ([]*domain.PrecheckMatch, error) {
	var rows []struct {
		ID         string    `db:"id"`
		AccountID  string    `db:"account_id"`
		JobID      string    `db:"job_id"`
		List       string    `db:"list_name"`
		Kind       string    `db:"kind"`
		Confidence string    `db:"confidence"`
		Distance   int       `db:"distance"`
		Created    time.Time `db:"created"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`
		SELECT id, account_id, job_id, list_name, kind, confidence, distance, created
		FROM precheck_matches WHERE account_id = ? ORDER BY created DESC, id DESC LIMIT ?`), accountID, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.PrecheckMatch, len(rows))
	for i, r := range rows {
		out[i] = &domain.PrecheckMatch{ID: r.ID, AccountID: r.AccountID, JobID: r.JobID, List: r.List, Kind: domain.HashKind(r.Kind),
			Confidence: domain.PrecheckMatchConfidence(r.Confidence), Distance: r.Distance, Created: r.Created.UTC()}
	}
	return out, nil
}
