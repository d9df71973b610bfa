package persistence

import (
	"context"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/jmoiron/sqlx"
)

// The hash lists of accounts (the API) beside the operator's: lists carry an
// account ('' for operator-wide), a mode, bands and a flood limit; hashes
// their provenance, state and match counts.

type hashListRow struct {
	ID         string     `db:"id"`
	AccountID  string     `db:"account_id"`
	Name       string     `db:"name"`
	Kind       string     `db:"kind"`
	Count      int64      `db:"count"`
	Created    time.Time  `db:"created"`
	Mode       string     `db:"mode"`
	BandExact  int        `db:"band_exact"`
	BandHigh   int        `db:"band_high"`
	BandMedium int        `db:"band_medium"`
	BandLow    int        `db:"band_low"`
	FloodLimit int        `db:"flood_limit"`
	Updated    *time.Time `db:"updated"`
}

const hashListColumns = `id, account_id, name, kind, count, created, mode, band_exact, band_high, band_medium, band_low, flood_limit, updated`

func (r hashListRow) list() *domain.HashList {
	l := &domain.HashList{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Kind: domain.HashKind(r.Kind), Count: r.Count,
		Created: r.Created.UTC(), Updated: r.Created.UTC(), Mode: domain.HashListMode(r.Mode), FloodLimit: r.FloodLimit}
	if r.Updated != nil {
		l.Updated = r.Updated.UTC()
	}
	if r.BandLow >= 0 {
		l.Bands = &domain.HashBands{Exact: r.BandExact, High: r.BandHigh, Medium: r.BandMedium, Low: r.BandLow}
	}
	return l
}

// bandColumns are the four band columns of b; -1 each for the server's.
func bandColumns(b *domain.HashBands) [4]int {
	if b == nil {
		return [4]int{-1, -1, -1, -1}
	}
	return [4]int{b.Exact, b.High, b.Medium, b.Low}
}

func (s *HashLists) selectLists(ctx context.Context, where string, args ...any) ([]*domain.HashList, error) {
	var rows []hashListRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+hashListColumns+` FROM hash_lists `+where), args...); err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.HashList, len(rows))
	for i, r := range rows {
		out[i] = r.list()
	}
	return out, nil
}

// AllHashLists returns every list of every account. Codes: UNAVAILABLE.
func (s *HashLists) AllHashLists(ctx context.Context) ([]*domain.HashList, error) {
	return s.selectLists(ctx, `ORDER BY id`)
}

// HashListsOf returns the account's lists and the operator-wide ones, by
// name. Codes: UNAVAILABLE.
func (s *HashLists) HashListsOf(ctx context.Context, accountID string) ([]*domain.HashList, error) {
	return s.selectLists(ctx, `WHERE account_id IN ('', ?) ORDER BY name, account_id`, accountID)
}

// GetHashList returns a list the account sees. Codes: NOT_FOUND.
func (s *HashLists) GetHashList(ctx context.Context, accountID, id string) (*domain.HashList, error) {
	ls, err := s.selectLists(ctx, `WHERE id = ? AND account_id IN ('', ?)`, id, accountID)
	if err != nil {
		return nil, err
	}
	if len(ls) == 0 {
		return nil, domain.Errorf(domain.NotFound, "hash list %q not found", id)
	}
	return ls[0], nil
}

func bumpHashListsGeneration(ctx context.Context, tx *sqlx.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE hash_lists_generation SET generation = generation + 1 WHERE id = 1`)
	return TranslateError(err)
}

// CreateHashList inserts l. Codes: ALREADY_EXISTS, RESOURCE_EXHAUSTED.
func (s *HashLists) CreateHashList(ctx context.Context, l *domain.HashList, maxLists int) error {
	l.Created, l.Updated = StoredTime(l.Created), StoredTime(l.Created)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM hash_lists WHERE account_id = ?`), l.AccountID); err != nil {
			return TranslateError(err)
		}
		if n >= maxLists {
			return domain.Errorf(domain.ResourceExhausted, "an account holds at most %d hash lists", maxLists)
		}
		b := bandColumns(l.Bands)
		_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO hash_lists (`+hashListColumns+`) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)`),
			l.ID, l.AccountID, l.Name, string(l.Kind), l.Created, string(l.Mode), b[0], b[1], b[2], b[3], l.FloodLimit, l.Updated)
		if err != nil {
			return describe(TranslateError(err), domain.AlreadyExists, "a hash list named %q already exists", l.Name)
		}
		return bumpHashListsGeneration(ctx, tx)
	})
}

// UpdateHashList stores l's name, mode, bands and flood limit. Codes:
// NOT_FOUND, ALREADY_EXISTS.
func (s *HashLists) UpdateHashList(ctx context.Context, l *domain.HashList) error {
	l.Updated = StoredTime(l.Updated)
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		b := bandColumns(l.Bands)
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE hash_lists SET name = ?, mode = ?, band_exact = ?, band_high = ?, band_medium = ?, band_low = ?,
			flood_limit = ?, updated = ? WHERE id = ? AND account_id = ?`),
			l.Name, string(l.Mode), b[0], b[1], b[2], b[3], l.FloodLimit, l.Updated, l.ID, l.AccountID)
		if err != nil {
			return describe(TranslateError(err), domain.AlreadyExists, "a hash list named %q already exists", l.Name)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return domain.Errorf(domain.NotFound, "hash list %q not found", l.ID)
		}
		return bumpHashListsGeneration(ctx, tx)
	})
}

// DeleteHashListByID removes a list of the account with its hashes. Codes:
// NOT_FOUND.
func (s *HashLists) DeleteHashListByID(ctx context.Context, accountID, id string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_lists WHERE id = ? AND account_id = ?`), id, accountID)
		if err != nil {
			return TranslateError(err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return domain.Errorf(domain.NotFound, "hash list %q not found", id)
		}
		for _, q := range []string{`DELETE FROM hash_list_entries WHERE list_id = ?`, `DELETE FROM hash_list_hits WHERE list_id = ?`} {
			if _, err := tx.ExecContext(ctx, tx.Rebind(q), id); err != nil {
				return TranslateError(err)
			}
		}
		return bumpHashListsGeneration(ctx, tx)
	})
}

// AddHashes upserts entries into a list, all or none. Codes:
// RESOURCE_EXHAUSTED past maxCount.
func (s *HashLists) AddHashes(ctx context.Context, listID string, entries []domain.HashListEntry, maxCount int64) error {
	// One row per hash: PostgreSQL refuses to update a row twice in one
	// statement. The last source and note given win.
	seen := make(map[string]int, len(entries))
	uniq := make([]domain.HashListEntry, 0, len(entries))
	for _, e := range entries {
		if i, ok := seen[e.Hex]; ok {
			uniq[i] = e
			continue
		}
		seen[e.Hex] = len(uniq)
		uniq = append(uniq, e)
	}
	now := StoredTime(time.Now())
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		for start := 0; start < len(uniq); start += insertBatch {
			batch := uniq[start:min(start+insertBatch, len(uniq))]
			var q strings.Builder
			q.WriteString(`INSERT INTO hash_list_entries (list_id, hash, quality, source, note, created) VALUES `)
			args := make([]any, 0, 6*len(batch))
			for i, e := range batch {
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, ?, ?)")
				args = append(args, listID, e.Hex, e.Quality, e.Source, e.Note, now)
			}
			q.WriteString(` ON CONFLICT (list_id, hash) DO UPDATE SET source = excluded.source, note = excluded.note`)
			if _, err := tx.ExecContext(ctx, tx.Rebind(q.String()), args...); err != nil {
				return TranslateError(err)
			}
		}
		if err := updateHashCount(ctx, tx, listID, now); err != nil {
			return err
		}
		var n int64
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT count FROM hash_lists WHERE id = ?`), listID); err != nil {
			return TranslateError(err)
		}
		if n > maxCount {
			return domain.Errorf(domain.ResourceExhausted, "a hash list holds at most %d hashes", maxCount)
		}
		return bumpHashListsGeneration(ctx, tx)
	})
}

func updateHashCount(ctx context.Context, tx *sqlx.Tx, listID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE hash_lists SET count = (SELECT COUNT(*) FROM hash_list_entries WHERE list_id = ?), updated = ? WHERE id = ?`),
		listID, now, listID)
	return TranslateError(err)
}

type hashEntryRow struct {
	Hash        string     `db:"hash"`
	Quality     int        `db:"quality"`
	Source      string     `db:"source"`
	Note        string     `db:"note"`
	State       string     `db:"state"`
	MatchCount  int64      `db:"match_count"`
	LastMatched *time.Time `db:"last_matched"`
	Created     *time.Time `db:"created"`
}

const hashEntryColumns = `hash, quality, source, note, state, match_count, last_matched, created`

func (r hashEntryRow) entry() *domain.HashListEntry {
	e := &domain.HashListEntry{Hex: r.Hash, Quality: r.Quality, Source: r.Source, Note: r.Note, State: domain.HashState(r.State), MatchCount: r.MatchCount}
	if r.LastMatched != nil {
		e.LastMatched = r.LastMatched.UTC()
	}
	if r.Created != nil {
		e.Created = r.Created.UTC()
	}
	return e
}

// ListHashes returns a page of a list's hashes by hash. Codes: UNAVAILABLE.
func (s *HashLists) ListHashes(ctx context.Context, listID, after string, limit int) ([]*domain.HashListEntry, error) {
	var rows []hashEntryRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+hashEntryColumns+` FROM hash_list_entries
		WHERE list_id = ? AND hash > ? ORDER BY hash LIMIT ?`), listID, after, limit)
	if err != nil {
		return nil, TranslateError(err)
	}
	out := make([]*domain.HashListEntry, len(rows))
	for i, r := range rows {
		out[i] = r.entry()
	}
	return out, nil
}

// GetHash returns one hash of a list. Codes: NOT_FOUND.
func (s *HashLists) GetHash(ctx context.Context, listID, hash string) (*domain.HashListEntry, error) {
	var r hashEntryRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT `+hashEntryColumns+` FROM hash_list_entries WHERE list_id = ? AND hash = ?`), listID, hash)
	if err != nil {
		return nil, describe(TranslateError(err), domain.NotFound, "hash %q not found in the list", hash)
	}
	return r.entry(), nil
}

// DeleteHash removes a hash from a list. Codes: NOT_FOUND.
func (s *HashLists) DeleteHash(ctx context.Context, listID, hash string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_list_entries WHERE list_id = ? AND hash = ?`), listID, hash)
		if err != nil {
			return TranslateError(err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return domain.Errorf(domain.NotFound, "hash %q not found in the list", hash)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_list_hits WHERE list_id = ? AND hash = ?`), listID, hash); err != nil {
			return TranslateError(err)
		}
		if err := updateHashCount(ctx, tx, listID, StoredTime(time.Now())); err != nil {
			return err
		}
		return bumpHashListsGeneration(ctx, tx)
	})
}

// SetHashState changes a hash's state. Codes: NOT_FOUND.
func (s *HashLists) SetHashState(ctx context.Context, listID, hash string, state domain.HashState, resetFlood bool) (*domain.HashListEntry, error) {
	var out *domain.HashListEntry
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE hash_list_entries SET state = ? WHERE list_id = ? AND hash = ?`), string(state), listID, hash)
		if err != nil {
			return TranslateError(err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return domain.Errorf(domain.NotFound, "hash %q not found in the list", hash)
		}
		if resetFlood {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_list_hits WHERE list_id = ? AND hash = ?`), listID, hash); err != nil {
				return TranslateError(err)
			}
		}
		var r hashEntryRow
		if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+hashEntryColumns+` FROM hash_list_entries WHERE list_id = ? AND hash = ?`), listID, hash); err != nil {
			return TranslateError(err)
		}
		out = r.entry()
		return bumpHashListsGeneration(ctx, tx)
	})
	return out, err
}

// RecordHit counts one match of a hash and applies the flood quarantine.
// Codes: UNAVAILABLE.
func (s *HashLists) RecordHit(ctx context.Context, hit domain.HashHit, flood int) (domain.HashHitOutcome, error) {
	var out domain.HashHitOutcome
	at := StoredTime(hit.At)
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		out = domain.HashHitOutcome{}
		var r struct {
			State  string `db:"state"`
			Source string `db:"source"`
			Note   string `db:"note"`
		}
		err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT state, source, note FROM hash_list_entries WHERE list_id = ? AND hash = ?`), hit.ListID, hit.Hash)
		if domain.ErrorCode(TranslateError(err)) == domain.NotFound {
			return nil
		}
		if err != nil {
			return TranslateError(err)
		}
		out.Found, out.State, out.Source, out.Note = true, domain.HashState(r.State), r.Source, r.Note
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE hash_list_entries SET match_count = match_count + 1, last_matched = ? WHERE list_id = ? AND hash = ?`),
			at, hit.ListID, hit.Hash); err != nil {
			return TranslateError(err)
		}
		if flood < 0 || out.State != domain.HashActive {
			return nil
		}
		since := at.Add(-time.Hour)
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hash_list_hits WHERE list_id = ? AND hash = ? AND created <= ?`), hit.ListID, hit.Hash, since); err != nil {
			return TranslateError(err)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO hash_list_hits (list_id, hash, content_hash, created) VALUES (?, ?, ?, ?)
			ON CONFLICT (list_id, hash, content_hash) DO UPDATE SET created = excluded.created`), hit.ListID, hit.Hash, hit.ContentHash, at); err != nil {
			return TranslateError(err)
		}
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM hash_list_hits WHERE list_id = ? AND hash = ?`), hit.ListID, hit.Hash); err != nil {
			return TranslateError(err)
		}
		if n <= flood {
			return nil
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE hash_list_entries SET state = ? WHERE list_id = ? AND hash = ?`),
			string(domain.HashQuarantined), hit.ListID, hit.Hash); err != nil {
			return TranslateError(err)
		}
		out.State, out.Quarantined = domain.HashQuarantined, true
		return bumpHashListsGeneration(ctx, tx)
	})
	return out, err
}
