-- +goose Up
-- The size of a review item's sealed content, in bytes, wherever it is kept
-- (in the row or in the blob store): a page of items stops before its
-- content would pass a byte budget (persistence/review_list.go), and the
-- content of an item in the blob store has no size in the row. NULL for the
-- items written before it, whose content is still in their row.
ALTER TABLE review_items ADD COLUMN content_size INTEGER;

-- +goose Down
ALTER TABLE review_items DROP COLUMN content_size;
