-- Hash lists of accounts beside the operator's (account_id '' is operator-wide),
-- with a mode, per-list PDQ bands (-1: the server's), a flood limit, and per-hash
-- provenance, state and match counts. hash_list_hits counts the distinct
-- contents a hash matched recently, for the flood quarantine
-- (docs/operations.md#image-precheck-hash-lists). SQLite cannot drop the
-- old UNIQUE (name), so both tables are rebuilt; entries first, so that
-- dropping the old lists cascades to nothing.

-- +goose Up
CREATE TABLE hash_lists_new (
    id          TEXT NOT NULL PRIMARY KEY,
    account_id  TEXT NOT NULL DEFAULT '',
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('md5', 'sha1', 'pdq')),
    count       INTEGER NOT NULL DEFAULT 0,
    created     TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    mode        TEXT NOT NULL DEFAULT 'HASH_LIST_MODE_ENFORCE',
    band_exact  INTEGER NOT NULL DEFAULT -1,
    band_high   INTEGER NOT NULL DEFAULT -1,
    band_medium INTEGER NOT NULL DEFAULT -1,
    band_low    INTEGER NOT NULL DEFAULT -1,
    flood_limit INTEGER NOT NULL DEFAULT 200,
    updated     TIMESTAMP CHECK (updated IS NULL OR typeof(updated) = 'integer')
);
INSERT INTO hash_lists_new (id, name, kind, count, created) SELECT id, name, kind, count, created FROM hash_lists;

CREATE TABLE hash_list_entries_new (
    list_id      TEXT NOT NULL,
    hash         TEXT NOT NULL,
    quality      INTEGER NOT NULL DEFAULT -1,
    source       TEXT NOT NULL DEFAULT '',
    note         TEXT NOT NULL DEFAULT '',
    state        TEXT NOT NULL DEFAULT 'HASH_STATE_ACTIVE',
    match_count  INTEGER NOT NULL DEFAULT 0,
    last_matched TIMESTAMP CHECK (last_matched IS NULL OR typeof(last_matched) = 'integer'),
    created      TIMESTAMP CHECK (created IS NULL OR typeof(created) = 'integer'),
    PRIMARY KEY (list_id, hash)
);
INSERT INTO hash_list_entries_new (list_id, hash, quality) SELECT list_id, hash, quality FROM hash_list_entries;

DROP TABLE hash_list_entries;
DROP TABLE hash_lists;
ALTER TABLE hash_lists_new RENAME TO hash_lists;
ALTER TABLE hash_list_entries_new RENAME TO hash_list_entries;
CREATE UNIQUE INDEX hash_lists_account_name_idx ON hash_lists (account_id, name);

CREATE TABLE hash_list_hits (
    list_id      TEXT NOT NULL,
    hash         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created      TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    PRIMARY KEY (list_id, hash, content_hash)
);
CREATE INDEX hash_list_hits_recent_idx ON hash_list_hits (list_id, hash, created);

-- +goose Down
DROP TABLE hash_list_hits;
DROP INDEX hash_lists_account_name_idx;
DELETE FROM hash_list_entries WHERE list_id IN (SELECT id FROM hash_lists WHERE account_id <> '');
DELETE FROM hash_lists WHERE account_id <> '';
CREATE TABLE hash_lists_old (
    id      TEXT NOT NULL PRIMARY KEY,
    name    TEXT NOT NULL UNIQUE,
    kind    TEXT NOT NULL CHECK (kind IN ('md5', 'sha1', 'pdq')),
    count   INTEGER NOT NULL DEFAULT 0,
    created TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer')
);
INSERT INTO hash_lists_old (id, name, kind, count, created) SELECT id, name, kind, count, created FROM hash_lists;
CREATE TABLE hash_list_entries_old (
    list_id TEXT NOT NULL REFERENCES hash_lists_old (id) ON DELETE CASCADE,
    hash    TEXT NOT NULL,
    quality INTEGER NOT NULL DEFAULT -1,
    PRIMARY KEY (list_id, hash)
);
INSERT INTO hash_list_entries_old (list_id, hash, quality) SELECT list_id, hash, quality FROM hash_list_entries;
DROP TABLE hash_list_entries;
DROP TABLE hash_lists;
ALTER TABLE hash_lists_old RENAME TO hash_lists;
ALTER TABLE hash_list_entries_old RENAME TO hash_list_entries;
