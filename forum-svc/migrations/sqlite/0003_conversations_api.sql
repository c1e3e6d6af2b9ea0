-- The conversations API: clients start conversations, reply, invite, leave and star.

-- Ids of new conversations and messages: conversation_id and message_id are INTEGER PRIMARY KEY
-- (the rowid), so an insert without one gets one above every existing id.

-- A closed conversation takes no reply and no invite; open_invite lets any participant invite.
ALTER TABLE conversations ADD COLUMN conversation_open BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE conversations ADD COLUMN open_invite BOOLEAN NOT NULL DEFAULT FALSE;

-- Per participant: the star; left_state 0 in the conversation, 1 left (a reply by someone else
-- brings the user back), 2 left ignoring it (gone for good); and the conversation's
-- last_message_date, copied here by every write that moves it, so that a user's list is read from
-- conversation_participants_inbox in its order (newest activity first), never sorted whole; its
-- last two columns let the starred and unread filters and the count read the index alone.
ALTER TABLE conversation_participants ADD COLUMN starred BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE conversation_participants ADD COLUMN left_state INTEGER NOT NULL DEFAULT 0 CHECK (left_state BETWEEN 0 AND 2);
ALTER TABLE conversation_participants ADD COLUMN last_message_date BIGINT NOT NULL DEFAULT 0;
UPDATE conversation_participants SET last_message_date = (
    SELECT c.last_message_date FROM conversations c WHERE c.conversation_id = conversation_participants.conversation_id);
CREATE INDEX conversation_participants_inbox
    ON conversation_participants (user_id, last_message_date DESC, conversation_id DESC, starred, last_read_date)
    WHERE left_state = 0;

-- Forum options of the conversations API.
ALTER TABLE forum_options ADD COLUMN discussions_per_page INTEGER NOT NULL DEFAULT 20 CHECK (discussions_per_page BETWEEN 1 AND 100);
ALTER TABLE forum_options ADD COLUMN max_recipients INTEGER NOT NULL DEFAULT 20 CHECK (max_recipients BETWEEN 1 AND 1000);
ALTER TABLE forum_options ADD COLUMN message_max_length INTEGER NOT NULL DEFAULT 10000 CHECK (message_max_length BETWEEN 1 AND 65536);

-- Idempotency-Key: the first answer to a write, per API key, acting user and key, recorded in the
-- transaction of the write itself, so that a retry replays it and nothing is written twice.
-- fingerprint is the SHA-256 (hex) of the request (method, path, fields); rows older than 24 h
-- no longer count.
CREATE TABLE idempotency_keys (
    api_key_hash    TEXT     NOT NULL,
    user_id         BIGINT   NOT NULL,
    idempotency_key TEXT     NOT NULL,
    fingerprint     TEXT     NOT NULL,
    created_at      BIGINT   NOT NULL,
    status          INTEGER  NOT NULL,
    body            TEXT     NOT NULL,
    PRIMARY KEY (api_key_hash, user_id, idempotency_key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
