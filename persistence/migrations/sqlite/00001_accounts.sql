-- Accounts and the API key records behind their JWTs (docs/api.md#authentication-and-accounts).
-- Times are INTEGER unix microseconds in columns declared TIMESTAMP (the
-- driver maps them to time.Time); the CHECKs reject any other encoding, which
-- would sort wrongly. See the package comment.

-- +goose Up
CREATE TABLE accounts (
    id                  TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    name                TEXT NOT NULL,
    type                TEXT NOT NULL,
    -- Limits; 0 means "use the server default".
    rps                 REAL NOT NULL DEFAULT 0,
    burst               INTEGER NOT NULL DEFAULT 0,
    evaluations_per_day INTEGER NOT NULL DEFAULT 0,
    webhook_secret      TEXT NOT NULL DEFAULT '',
    created             TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    updated             TIMESTAMP NOT NULL CHECK (typeof(updated) = 'integer')
);
-- ListAccounts and keyset paging order by (created, id).
CREATE INDEX accounts_created_id_idx ON accounts (created, id);

CREATE TABLE api_keys (
    id         TEXT NOT NULL PRIMARY KEY CHECK (id <> ''),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name       TEXT NOT NULL DEFAULT '',
    created    TIMESTAMP NOT NULL CHECK (typeof(created) = 'integer'),
    expires_at TIMESTAMP CHECK (expires_at IS NULL OR typeof(expires_at) = 'integer'),
    revoked_at TIMESTAMP CHECK (revoked_at IS NULL OR typeof(revoked_at) = 'integer')
);
-- Leads with account_id: serves the foreign key and ListKeys' ORDER BY.
CREATE INDEX api_keys_account_id_idx ON api_keys (account_id, created, id);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE accounts;
