-- One row that DB.Ready rewrites, only after a write met a storage fault
-- (disk full, I/O error), to learn whether writes work again (so /readyz recovers).

-- +goose Up
CREATE TABLE storage_probe (
    id      INTEGER NOT NULL PRIMARY KEY,
    payload BLOB NOT NULL
);

-- +goose Down
DROP TABLE storage_probe;
