-- What the OpenAI-compatible moderation endpoint evaluates when a call names
-- OpenAI's own models (or none): the policy key of a policy-first account,
-- the label tag name of a label-first one. Empty means none is set.

-- +goose Up
ALTER TABLE accounts ADD COLUMN moderation_policy_key TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN moderation_tag TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE accounts DROP COLUMN moderation_tag;
ALTER TABLE accounts DROP COLUMN moderation_policy_key;
