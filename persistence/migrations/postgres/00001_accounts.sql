-- Accounts and the API key records behind their JWTs (docs/api.md#authentication-and-accounts).
-- Times are TIMESTAMPTZ (microseconds); see the package comment.

-- +goose Up
CREATE TABLE accounts (
    id                  TEXT PRIMARY KEY CHECK (id <> ''),
    name                TEXT NOT NULL,
    type                TEXT NOT NULL,
    -- Limits; 0 means "use the server default".
    rps                 DOUBLE PRECISION NOT NULL DEFAULT 0,
    burst               INTEGER NOT NULL DEFAULT 0,
    evaluations_per_day BIGINT NOT NULL DEFAULT 0,
    webhook_secret      TEXT NOT NULL DEFAULT '',
    created             TIMESTAMPTZ NOT NULL,
    updated             TIMESTAMPTZ NOT NULL
);
-- ListAccounts and keyset paging order by (created, id).
CREATE INDEX accounts_created_id_idx ON accounts (created, id);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY CHECK (id <> ''),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name       TEXT NOT NULL DEFAULT '',
    created    TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);
-- Leads with account_id: serves the foreign key and ListKeys' ORDER BY.
CREATE INDEX api_keys_account_id_idx ON api_keys (account_id, created, id);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE accounts;
