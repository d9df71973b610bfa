-- Hash lists of accounts beside the operator's (account_id '' is operator-wide),
-- with a mode, per-list PDQ bands (-1: the server's), a flood limit, and per-hash
-- provenance, state and match counts. hash_list_hits counts the distinct
-- contents a hash matched recently, for the flood quarantine
-- (docs/operations.md#image-precheck-hash-lists).

-- +goose Up
ALTER TABLE hash_lists DROP CONSTRAINT hash_lists_name_key;
ALTER TABLE hash_lists ADD COLUMN account_id TEXT NOT NULL DEFAULT '';
ALTER TABLE hash_lists ADD COLUMN mode TEXT NOT NULL DEFAULT 'HASH_LIST_MODE_ENFORCE';
ALTER TABLE hash_lists ADD COLUMN band_exact INTEGER NOT NULL DEFAULT -1;
ALTER TABLE hash_lists ADD COLUMN band_high INTEGER NOT NULL DEFAULT -1;
ALTER TABLE hash_lists ADD COLUMN band_medium INTEGER NOT NULL DEFAULT -1;
ALTER TABLE hash_lists ADD COLUMN band_low INTEGER NOT NULL DEFAULT -1;
ALTER TABLE hash_lists ADD COLUMN flood_limit INTEGER NOT NULL DEFAULT 200;
ALTER TABLE hash_lists ADD COLUMN updated TIMESTAMPTZ;
CREATE UNIQUE INDEX hash_lists_account_name_idx ON hash_lists (account_id, name);

ALTER TABLE hash_list_entries ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE hash_list_entries ADD COLUMN note TEXT NOT NULL DEFAULT '';
ALTER TABLE hash_list_entries ADD COLUMN state TEXT NOT NULL DEFAULT 'HASH_STATE_ACTIVE';
ALTER TABLE hash_list_entries ADD COLUMN match_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hash_list_entries ADD COLUMN last_matched TIMESTAMPTZ;
ALTER TABLE hash_list_entries ADD COLUMN created TIMESTAMPTZ;

CREATE TABLE hash_list_hits (
    list_id      TEXT NOT NULL,
    hash         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (list_id, hash, content_hash)
);
CREATE INDEX hash_list_hits_recent_idx ON hash_list_hits (list_id, hash, created);

-- +goose Down
DROP TABLE hash_list_hits;
ALTER TABLE hash_list_entries DROP COLUMN created;
ALTER TABLE hash_list_entries DROP COLUMN last_matched;
ALTER TABLE hash_list_entries DROP COLUMN match_count;
ALTER TABLE hash_list_entries DROP COLUMN state;
ALTER TABLE hash_list_entries DROP COLUMN note;
ALTER TABLE hash_list_entries DROP COLUMN source;
DROP INDEX hash_lists_account_name_idx;
DELETE FROM hash_lists WHERE account_id <> '';
ALTER TABLE hash_lists DROP COLUMN updated;
ALTER TABLE hash_lists DROP COLUMN flood_limit;
ALTER TABLE hash_lists DROP COLUMN band_low;
ALTER TABLE hash_lists DROP COLUMN band_medium;
ALTER TABLE hash_lists DROP COLUMN band_high;
ALTER TABLE hash_lists DROP COLUMN band_exact;
ALTER TABLE hash_lists DROP COLUMN mode;
ALTER TABLE hash_lists DROP COLUMN account_id;
ALTER TABLE hash_lists ADD CONSTRAINT hash_lists_name_key UNIQUE (name);
