-- +goose Up
-- The blob store key of a review item's retained content that is not text
-- (persistence/review_media.go): NULL while the sealed content is kept in
-- the row (text), '' while it waits in the row to be moved, the key once
-- moved (the row's content is then empty, not NULL, so that the retention
-- sweep's partial indexes still hold the item).
ALTER TABLE review_items ADD COLUMN content_blob TEXT;
CREATE INDEX review_items_offload_idx ON review_items (id) WHERE content_blob = '';

-- +goose Down
DROP INDEX review_items_offload_idx;
ALTER TABLE review_items DROP COLUMN content_blob;
