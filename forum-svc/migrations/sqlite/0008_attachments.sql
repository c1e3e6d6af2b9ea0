-- Attachments of conversation messages, stored in the database in chunks.
--
-- A client first asks for an attachment key (attachment_keys), uploads files under it, then names
-- the key on the start, reply or edit that the files go with: in that write's transaction the
-- key's files get their message_id and lose their key. A key may name the conversation it was
-- asked for (a reply's, an edit's); none: for a new conversation. A key's files never attached
-- go with the key when the sweep deletes keys older than 24 hours (ON DELETE CASCADE), and a
-- key named after a conversation goes with that conversation.
CREATE TABLE attachment_keys (
    attachment_key  TEXT   NOT NULL PRIMARY KEY,
    user_id         BIGINT NOT NULL REFERENCES users (user_id),
    conversation_id BIGINT REFERENCES conversations (conversation_id) ON DELETE CASCADE,
    created_at      BIGINT NOT NULL
);
CREATE INDEX attachment_keys_created_at ON attachment_keys (created_at);
CREATE INDEX attachment_keys_conversation_id ON attachment_keys (conversation_id);

-- One file. It is not complete while its chunks are being written: such a row is shown to
-- nobody, and an upload cut short leaves it to the sweep of its key. mime_type is the type
-- sniffed from its first bytes, file_hash the SHA-256 (hex) of its bytes (the ETag). A message's deletion (its
-- conversation's) takes its files, and their chunks and thumbnail with them.
CREATE TABLE attachments (
    attachment_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    attachment_key  TEXT   REFERENCES attachment_keys (attachment_key) ON DELETE CASCADE,
    message_id      BIGINT REFERENCES conversation_messages (message_id) ON DELETE CASCADE,
    user_id         BIGINT NOT NULL REFERENCES users (user_id),
    filename        TEXT   NOT NULL,
    file_size       BIGINT NOT NULL CHECK (file_size >= 0),
    complete        BOOLEAN NOT NULL DEFAULT FALSE,
    file_hash       TEXT   NOT NULL,
    mime_type       TEXT   NOT NULL,
    width           INTEGER NOT NULL DEFAULT 0 CHECK (width >= 0),
    height          INTEGER NOT NULL DEFAULT 0 CHECK (height >= 0),
    attach_date     BIGINT NOT NULL,
    CHECK ((attachment_key IS NULL) <> (message_id IS NULL))
);
CREATE INDEX attachments_attachment_key ON attachments (attachment_key);
CREATE INDEX attachments_message_id ON attachments (message_id);

-- The bytes of a file, in chunks of 64 KiB (the last one shorter), numbered from 0.
CREATE TABLE attachment_data (
    attachment_id BIGINT  NOT NULL REFERENCES attachments (attachment_id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL CHECK (seq >= 0),
    bytes         BLOB    NOT NULL,
    PRIMARY KEY (attachment_id, seq)
);

-- An image's thumbnail, made on its first request and kept.
CREATE TABLE attachment_thumbnails (
    attachment_id BIGINT  NOT NULL PRIMARY KEY REFERENCES attachments (attachment_id) ON DELETE CASCADE,
    mime_type     TEXT    NOT NULL,
    bytes         BLOB    NOT NULL
);

-- Limits of uploads: bytes per file, files per message, and the file name extensions allowed
-- (lowercase, separated by single spaces; the service checks their shape when it sets them).
ALTER TABLE forum_options ADD COLUMN attachment_max_file_size BIGINT NOT NULL DEFAULT 10485760
    CHECK (attachment_max_file_size BETWEEN 1 AND 104857600);
ALTER TABLE forum_options ADD COLUMN attachment_max_per_message INTEGER NOT NULL DEFAULT 10
    CHECK (attachment_max_per_message BETWEEN 1 AND 100);
ALTER TABLE forum_options ADD COLUMN attachment_extensions TEXT NOT NULL DEFAULT 'gif jpe jpeg jpg pdf png txt webp zip';
