-- Labels of label-first accounts and their tags (the API's Label, LabelTag).
-- policy_id is '' (never NULL) for an independent label, so one partial
-- unique index gives both rules: (account, name, policy) for policy-scoped
-- labels and (account, name) among independent ones. A soft-deleted label
-- (deleted_at set) leaves the index and frees its name.

-- +goose Up
CREATE TABLE labels (
    id               TEXT PRIMARY KEY CHECK (id <> ''),
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    name             TEXT NOT NULL CHECK (name <> ''),
    policy_id        TEXT NOT NULL DEFAULT '',
    description      TEXT NOT NULL DEFAULT '',
    disabled         BOOLEAN NOT NULL DEFAULT FALSE,
    -- The last sequentialVersion handed out; CreateLabelVersion increments it
    -- under the row lock, so numbers have no gaps or duplicates.
    last_version_seq BIGINT NOT NULL DEFAULT 0,
    created          TIMESTAMPTZ NOT NULL,
    updated          TIMESTAMPTZ NOT NULL,
    archived_at      TIMESTAMPTZ,
    deleted_at       TIMESTAMPTZ
);
CREATE UNIQUE INDEX labels_account_name_policy_uq ON labels (account_id, name, policy_id)
    WHERE deleted_at IS NULL;
-- ListLabels: newest first per account.
CREATE INDEX labels_account_created_idx ON labels (account_id, created DESC, id DESC);

CREATE TABLE label_tags (
    id         TEXT PRIMARY KEY CHECK (id <> ''),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name       TEXT NOT NULL CHECK (name <> ''),
    color      TEXT NOT NULL DEFAULT '',
    created    TIMESTAMPTZ NOT NULL,
    updated    TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX label_tags_account_name_uq ON label_tags (account_id, name);

CREATE TABLE label_tag_links (
    label_id TEXT NOT NULL REFERENCES labels (id),
    tag_id   TEXT NOT NULL REFERENCES label_tags (id),
    PRIMARY KEY (label_id, tag_id)
);
-- The tag_ids filter of ListLabels.
CREATE INDEX label_tag_links_tag_idx ON label_tag_links (tag_id, label_id);

-- +goose Down
DROP TABLE label_tag_links;
DROP TABLE label_tags;
DROP TABLE labels;
