package main

// SQLite: the bytes of each table's b-trees (dbstat), and the file.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"

	_ "modernc.org/sqlite" // the driver the server uses
)

// fileRow is the name under which readSQLiteSizes reports the whole file.
const fileRow = "(file)"

var errNoWAL = errors.New("SQLite: not measured")

// readSQLiteSizes reads the pages of every table and index by table
// (indexes under their table's name), and the file's pages.
func readSQLiteSizes(ctx context.Context, path string) (map[string]tableBytes, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `
		SELECT m.tbl_name, m.type, sum(d.pgsize)
		FROM dbstat d JOIN sqlite_master m ON m.name = d.name
		GROUP BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("dbstat: %w", err)
	}
	defer rows.Close()
	out := map[string]tableBytes{}
	for rows.Next() {
		var name, typ string
		var n float64
		if err := rows.Scan(&name, &typ, &n); err != nil {
			return nil, err
		}
		t := out[name]
		if typ == "index" {
			t.indexes += n
		} else {
			t.heap += n
		}
		t.total += n
		out[name] = t
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var pages, size float64
	if err := db.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count), (SELECT page_size FROM pragma_page_size)`).Scan(&pages, &size); err != nil {
		return nil, err
	}
	out[fileRow] = tableBytes{total: pages * size}
	return out, nil
}

func runSQLite(ctx context.Context, o options, bin, dataDir string) error {
	path := filepath.Join(dataDir, "contenteval.db")
	s, err := setup(bin, dataDir, "sqlite:"+path)
	if err != nil {
		return err
	}
	defer func() { s.stop() }()
	if _, err := s.submit(0, 1, 1, true); err != nil {
		return err
	}
	before, err := readSQLiteSizes(ctx, path)
	if err != nil {
		return err
	}
	if _, err := s.submit(1, o.n, o.clients, true); err != nil {
		return err
	}
	after, err := readSQLiteSizes(ctx, path)
	if err != nil {
		return err
	}
	fmt.Println()
	printSizes("sqlite", o.n, before, after, nil, errNoWAL)
	fmt.Println("\nSQLite: heap is the table's b-tree, indexes its indexes' b-trees (dbstat); the file is page_count × page_size, free pages included.")
	return nil
}
