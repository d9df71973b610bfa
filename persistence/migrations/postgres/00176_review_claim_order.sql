-- +goose Up
-- The next open item of an account, and of a queue, in the claim order, read
-- from an index's head however many items are open (persistence/review_claims.go).
CREATE INDEX review_items_next_idx ON review_items (account_id, queue_priority DESC, (sla_deadline IS NULL), sla_deadline, position, id)
    WHERE state = 'open';
CREATE INDEX review_items_queue_next_idx ON review_items (queue_id, (sla_deadline IS NULL), sla_deadline, position, id)
    WHERE state = 'open';

-- +goose Down
DROP INDEX review_items_queue_next_idx;
DROP INDEX review_items_next_idx;
