-- One row that DB.Ready rewrites, only after a write met a storage fault
-- (disk full, I/O error), to learn whether writes work again (so /readyz recovers).
-- EXTERNAL: stored uncompressed, so the probe needs the space it claims.

-- +goose Up
CREATE TABLE storage_probe (
    id      INTEGER NOT NULL PRIMARY KEY,
    payload BYTEA NOT NULL
);
ALTER TABLE storage_probe ALTER COLUMN payload SET STORAGE EXTERNAL;

-- +goose Down
DROP TABLE storage_probe;
