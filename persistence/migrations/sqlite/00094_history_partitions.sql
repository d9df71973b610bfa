-- SQLite has no partitions: expiry deletes in bounded batches, and an
-- incremental vacuum gives the freed pages back to the file system a few
-- at a time (docs/operations.md, "Retention"). That needs auto_vacuum =
-- INCREMENTAL, which a new file gets from the connection settings before
-- its first table; an existing file takes it only through a VACUUM, which
-- rewrites the whole file once here (it needs as much free disk again)
-- and cannot run inside a transaction.

-- +goose NO TRANSACTION
-- +goose Up
PRAGMA auto_vacuum = INCREMENTAL;
VACUUM;

-- +goose Down
-- Nothing to undo: incremental vacuum only changes how free pages are
-- kept, and new connections ask for it anyway.
SELECT 1;
