-- +goose Up
-- The retention sweep's two reads of the items that still hold retained
-- content (persistence/review_content.go): those due, by expiry time, and
-- all of them in id order, to find those whose job is gone. Both leave out
-- the items whose content is already deleted, which stay as long as their
-- queue: review_items_content_idx held them too, so the sweep's read of
-- the due content grew with every item ever decided.
CREATE INDEX review_items_due_content_idx ON review_items (content_expires_at) WHERE content IS NOT NULL;
CREATE INDEX review_items_holding_content_idx ON review_items (id) WHERE content IS NOT NULL;
DROP INDEX review_items_content_idx;

-- +goose Down
CREATE INDEX review_items_content_idx ON review_items (content_expires_at);
DROP INDEX review_items_holding_content_idx;
DROP INDEX review_items_due_content_idx;
