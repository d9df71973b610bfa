package main

// PostgreSQL: sizes by table (the partitions of a partitioned table added
// up), WAL, and the HOT share of the jobs table's updates.

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/contenteval/contenteval/bench"
	"github.com/contenteval/contenteval/persistence"
)

// tableBytes is one table's bytes: its main fork, its TOAST (table and
// index), its indexes, and all of it (pg_total_relation_size, which adds
// the free space and visibility maps).
type tableBytes struct {
	heap, toast, indexes, total float64
}

// pgSizes is the size of each of the schema's tables and partitions, with
// the table (partition root) it belongs to.
const pgSizes = `
SELECT c.relname, (SELECT relname FROM pg_class WHERE oid = coalesce(pg_partition_root(c.oid), c.oid)) AS root,
	pg_relation_size(c.oid)::float8,
	coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::float8,
	pg_indexes_size(c.oid)::float8,
	pg_total_relation_size(c.oid)::float8
FROM pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'`

// leafBytes is one table or partition's bytes and its table's name.
type leafBytes struct {
	root string
	tableBytes
}

func readPGSizes(ctx context.Context, db *persistence.DB) (map[string]leafBytes, error) {
	rows, err := db.QueryContext(ctx, pgSizes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]leafBytes{}
	for rows.Next() {
		var name string
		var l leafBytes
		if err := rows.Scan(&name, &l.root, &l.heap, &l.toast, &l.indexes, &l.total); err != nil {
			return nil, err
		}
		out[name] = l
	}
	return out, rows.Err()
}

// byTable adds up the partitions of each table, before and after. A
// partition the server created ahead of time during the run and that holds
// no row is left out: its empty indexes and TOAST are no job's bytes.
func byTable(before, after map[string]leafBytes) (b, a map[string]tableBytes) {
	b, a = map[string]tableBytes{}, map[string]tableBytes{}
	add := func(m map[string]tableBytes, l leafBytes) {
		t := m[l.root]
		t.heap, t.toast, t.indexes, t.total = t.heap+l.heap, t.toast+l.toast, t.indexes+l.indexes, t.total+l.total
		m[l.root] = t
	}
	for name, l := range after {
		old, existed := before[name]
		if !existed && l.heap == 0 {
			continue
		}
		add(a, l)
		if existed {
			add(b, old)
		}
	}
	return b, a
}

// pgWALByTable attributes the WAL records between two LSNs to the schema's
// tables by the relation each record's first block belongs to (a table, a
// partition, one of their indexes, their TOAST). Commit records name no
// relation and are left out. Needs pg_walinspect (PostgreSQL 15+).
const pgWALByTable = `
WITH t AS (
	SELECT c.oid, c.reltoastrelid,
		(SELECT relname FROM pg_class WHERE oid = coalesce(pg_partition_root(c.oid), c.oid)) AS root
	FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
), f AS (
	SELECT pg_relation_filenode(t.oid) AS fn, root FROM t
	UNION ALL SELECT pg_relation_filenode(i.indexrelid), root FROM t JOIN pg_index i ON i.indrelid = t.oid
	UNION ALL SELECT pg_relation_filenode(t.reltoastrelid), root FROM t WHERE t.reltoastrelid <> 0
	UNION ALL SELECT pg_relation_filenode(i.indexrelid), root FROM t JOIN pg_index i ON i.indrelid = t.reltoastrelid
), w AS (
	SELECT (regexp_match(block_ref, 'rel \d+/\d+/(\d+)'))[1]::oid AS fn, record_length
	FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) WHERE block_ref IS NOT NULL
)
SELECT f.root, sum(w.record_length)::float8 FROM w JOIN f ON f.fn = w.fn GROUP BY f.root`

func readPGWAL(ctx context.Context, db *persistence.DB, from, to string) (map[string]float64, error) {
	rows, err := db.QueryContext(ctx, pgWALByTable, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var name string
		var n float64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}

func lsn(ctx context.Context, db *persistence.DB) (string, error) {
	var s string
	return s, db.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&s)
}

// hotCounts are the updates of the jobs table's partitions, all and HOT.
func hotCounts(ctx context.Context, db *persistence.DB) (upd, hot int64, err error) {
	err = db.QueryRowContext(ctx, `
		SELECT coalesce(sum(n_tup_upd), 0)::bigint, coalesce(sum(n_tup_hot_upd), 0)::bigint
		FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
		WHERE s.schemaname = current_schema() AND coalesce(pg_partition_root(c.oid), c.oid) = 'jobs'::regclass`).Scan(&upd, &hot)
	return upd, hot, err
}

func runPostgres(ctx context.Context, o options, bin, dataDir string) error {
	dbURL, drop, err := bench.PrivateSchema(ctx, o.pg, "ce_jobbytes")
	if err != nil {
		return err
	}
	defer drop()
	s, err := setup(bin, dataDir, dbURL)
	if err != nil {
		return err
	}
	defer func() { s.stop() }()
	stats, err := persistence.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer stats.Close()
	u, _ := url.Parse(dbURL)
	schema := u.Query().Get("search_path")
	// Per-schema, so that it goes with the schema and another run's copy
	// is not disturbed; without it the WAL is the whole server's only.
	_, walErr := stats.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA "+schema)

	if _, err := s.submit(0, 1, 1, true); err != nil { // the first write of every table
		return err
	}
	before, err := readPGSizes(ctx, stats)
	if err != nil {
		return err
	}
	_, _ = stats.ExecContext(ctx, "CHECKPOINT") // full-page images only of pages the run itself fills
	lsn0, err := lsn(ctx, stats)
	if err != nil {
		return err
	}
	if _, err := s.submit(1, o.n, o.clients, true); err != nil {
		return err
	}
	lsn1, err := lsn(ctx, stats)
	if err != nil {
		return err
	}
	after, err := readPGSizes(ctx, stats)
	if err != nil {
		return err
	}
	var walTotal float64
	if err := stats.QueryRowContext(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8`, lsn1, lsn0).Scan(&walTotal); err != nil {
		return err
	}
	var wal map[string]float64
	if walErr == nil {
		wal, walErr = readPGWAL(ctx, stats, lsn0, lsn1)
	}
	b, a := byTable(before, after)
	printSizes("postgres", o.n, b, a, wal, walErr)
	fmt.Printf("\nWAL of the whole server between the first and the last job: %.0f bytes per job (other sessions' writes included).\n", walTotal/float64(o.n))
	if o.async > 0 {
		return asyncHOT(ctx, o, s, stats)
	}
	return nil
}

// asyncHOT runs o.async queued jobs through the server's workers and
// prints the share of HOT updates among the jobs table's updates. The
// server is stopped around the run, as a backend's statistics reach
// pg_stat_user_tables when it flushes them, at the latest when it exits.
func asyncHOT(ctx context.Context, o options, s *server, stats *persistence.DB) error {
	s.stop()
	upd0, hot0, err := hotCounts(ctx, stats)
	if err != nil {
		return err
	}
	if err := s.start(); err != nil {
		return err
	}
	if _, err := s.submit(1_000_000, o.async, o.clients, false); err != nil {
		return err
	}
	if err := s.waitFinished(10 * time.Minute); err != nil {
		return err
	}
	s.stop()
	upd1, hot1, err := hotCounts(ctx, stats)
	if err != nil {
		return err
	}
	upd, hot := upd1-upd0, hot1-hot0
	share := 0.0
	if upd > 0 {
		share = 100 * float64(hot) / float64(upd)
	}
	fmt.Printf("\nAsynchronous jobs: %d, jobs table updates %d (%.2f per job), HOT %d: %.0f%% HOT.\n",
		o.async, upd, float64(upd)/float64(o.async), hot, share)
	return nil
}

// printSizes prints the bytes per job of each table that grew.
func printSizes(backend string, n int, before, after map[string]tableBytes, wal map[string]float64, walErr error) {
	names := make([]string, 0, len(after))
	for name := range after {
		names = append(names, name)
	}
	sort.Strings(names)
	per := func(a, b float64) float64 { return (a - b) / float64(n) }
	fmt.Printf("## %s: bytes per job\n\n| table | heap | TOAST | indexes | total | WAL |\n|---|---|---|---|---|---|\n", backend)
	var sum tableBytes
	var walSum, fileBytes float64
	for _, name := range names {
		a, b := after[name], before[name]
		d := tableBytes{per(a.heap, b.heap), per(a.toast, b.toast), per(a.indexes, b.indexes), per(a.total, b.total)}
		w := wal[name] / float64(n)
		if d.total == 0 && w == 0 {
			continue
		}
		if name == fileRow {
			fileBytes = d.total
			continue
		}
		sum.heap, sum.toast, sum.indexes, sum.total = sum.heap+d.heap, sum.toast+d.toast, sum.indexes+d.indexes, sum.total+d.total
		walSum += w
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f | %s |\n", name, d.heap, d.toast, d.indexes, d.total, walCell(w, walErr))
	}
	fmt.Printf("| **all** | %.0f | %.0f | %.0f | **%.0f** | %s |\n", sum.heap, sum.toast, sum.indexes, sum.total, walCell(walSum, walErr))
	if fileBytes != 0 {
		fmt.Printf("| (the file) | | | | %.0f | |\n", fileBytes)
	}
	if walErr != nil && wal != nil {
		fmt.Printf("\nWAL by table not measured: %v\n", walErr)
	}
}

func walCell(w float64, err error) string {
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", w)
}
