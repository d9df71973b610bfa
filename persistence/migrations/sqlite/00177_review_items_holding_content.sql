-- +goose Up
-- The items that still hold retained content, in id order: the retention
-- sweep walks them to find those whose job is gone
-- (persistence/review_content.go), without reading the decided items whose
-- content is already deleted, which stay as long as their queue.
CREATE INDEX review_items_holding_content_idx ON review_items (id) WHERE content IS NOT NULL;

-- +goose Down
DROP INDEX review_items_holding_content_idx;
