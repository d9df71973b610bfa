-- A key's role decides which operations it may call; keys issued before
-- roles existed could call everything, so they become admin.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin'
    CHECK (role IN ('admin', 'api', 'reviewer'));

-- +goose Down
ALTER TABLE api_keys DROP COLUMN role;
