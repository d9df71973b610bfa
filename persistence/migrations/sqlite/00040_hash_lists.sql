-- Operator hash lists for the image precheck (docs/operations.md#image-precheck-hash-lists) and the audit trail
-- of matches. Matched content is never stored: only who, when, which list.

-- +goose Up
CREATE TABLE hash_lists (
    id      TEXT NOT NULL PRIMARY KEY,
    name    TEXT NOT NULL UNIQUE,
    kind    TEXT NOT NULL CHECK (kind IN ('md5', 'sha1', 'pdq')),
    count   INTEGER NOT NULL DEFAULT 0,
    created TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer')
);

CREATE TABLE hash_list_entries (
    list_id TEXT NOT NULL REFERENCES hash_lists (id) ON DELETE CASCADE,
    hash    TEXT NOT NULL,
    quality INTEGER NOT NULL DEFAULT -1,
    PRIMARY KEY (list_id, hash)
);

-- One row; bumped by every import and delete so servers reload their lists.
CREATE TABLE hash_lists_generation (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO hash_lists_generation (id, generation) VALUES (1, 0);

CREATE TABLE precheck_matches (
    id         TEXT NOT NULL PRIMARY KEY,
    account_id TEXT NOT NULL,
    job_id     TEXT NOT NULL DEFAULT '',
    list_name  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    confidence TEXT NOT NULL,
    distance   INTEGER NOT NULL DEFAULT 0,
    created    TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer')
);
CREATE INDEX precheck_matches_account_idx ON precheck_matches (account_id, created);

-- +goose Down
DROP TABLE precheck_matches;
DROP TABLE hash_lists_generation;
DROP TABLE hash_list_entries;
DROP TABLE hash_lists;
