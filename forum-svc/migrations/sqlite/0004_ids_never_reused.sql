-- Ids of deleted conversations and messages are never given again. 0001 made conversation_id and
-- message_id INTEGER PRIMARY KEY, so a new row took the largest id stored + 1: when the last
-- participant left the conversation holding the largest ids (Leave deletes it and, by ON DELETE
-- CASCADE, its messages), the next conversation and messages took those ids again, and a replayed
-- Idempotency-Key answer or a client's cached id named another conversation. PostgreSQL's
-- identity columns never go back. AUTOINCREMENT keeps the largest id ever used in
-- sqlite_sequence (explicit ids of a seed file included); ids freed before this migration are
-- not known, so it starts from the largest stored.
--
-- SQLite cannot alter a column, so the tables are rebuilt, each copied once, keeping every column,
-- default, check, constraint and index as 0001..0003 left them. The runner's transaction keeps
-- foreign keys on, so dropping a parent still referred to would delete its children's rows by ON
-- DELETE CASCADE: the new tables are made under new names, conversation_participants too (its
-- foreign key would keep it a child of the old conversations), the children referring to the new
-- conversations; the old children go before the old parent, which then has nothing to cascade
-- to; renaming the new conversations points its children's references at the final name. Nothing
-- else refers to these tables.
--
-- Measured 2026-11-24 (2 cores, the service's driver): on a 135 MB file of 1,000,000 messages,
-- 100,000 conversations and 200,000 participants, 4.8 to 6.0 s; the file grows by the size of
-- the three tables, whose old pages stay free for later rows. A reply takes as long as before
-- (0.84 to 1.19 ms before, 0.84 to 0.98 ms after, 2,000 replies a run, 7 runs each).

CREATE TABLE conversations_0004 (
    conversation_id   INTEGER PRIMARY KEY AUTOINCREMENT CHECK (conversation_id > 0),
    title             TEXT   NOT NULL,
    user_id           BIGINT NOT NULL REFERENCES users (user_id),
    start_date        BIGINT NOT NULL DEFAULT 0,
    message_count     BIGINT NOT NULL DEFAULT 0,
    first_message_id  BIGINT NOT NULL DEFAULT 0,
    last_message_id   BIGINT NOT NULL DEFAULT 0,
    last_message_date BIGINT NOT NULL DEFAULT 0,
    conversation_open BOOLEAN NOT NULL DEFAULT TRUE,
    open_invite       BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE TABLE conversation_participants_0004 (
    conversation_id   BIGINT NOT NULL REFERENCES conversations_0004 (conversation_id) ON DELETE CASCADE,
    user_id           BIGINT NOT NULL REFERENCES users (user_id),
    last_read_date    BIGINT NOT NULL DEFAULT 0 CHECK (last_read_date >= 0),
    starred           BOOLEAN NOT NULL DEFAULT FALSE,
    left_state        INTEGER NOT NULL DEFAULT 0 CHECK (left_state BETWEEN 0 AND 2),
    last_message_date BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_id, user_id)
);

CREATE TABLE conversation_messages_0004 (
    message_id      INTEGER PRIMARY KEY AUTOINCREMENT CHECK (message_id > 0),
    conversation_id BIGINT NOT NULL REFERENCES conversations_0004 (conversation_id) ON DELETE CASCADE,
    user_id         BIGINT NOT NULL REFERENCES users (user_id),
    message         TEXT   NOT NULL,
    message_date    BIGINT NOT NULL CHECK (message_date >= 0),
    position        BIGINT NOT NULL CHECK (position <> 0),
    CONSTRAINT conversation_messages_position UNIQUE (conversation_id, position)
);

-- Explicit ids also set sqlite_sequence to the largest copied.
INSERT INTO conversations_0004 (conversation_id, title, user_id, start_date, message_count, first_message_id,
        last_message_id, last_message_date, conversation_open, open_invite)
    SELECT conversation_id, title, user_id, start_date, message_count, first_message_id,
        last_message_id, last_message_date, conversation_open, open_invite FROM conversations;
INSERT INTO conversation_participants_0004 (conversation_id, user_id, last_read_date, starred, left_state, last_message_date)
    SELECT conversation_id, user_id, last_read_date, starred, left_state, last_message_date FROM conversation_participants;
INSERT INTO conversation_messages_0004 (message_id, conversation_id, user_id, message, message_date, position)
    SELECT message_id, conversation_id, user_id, message, message_date, position FROM conversation_messages;

DROP TABLE conversation_messages;
DROP TABLE conversation_participants;
DROP TABLE conversations;

ALTER TABLE conversations_0004 RENAME TO conversations;
ALTER TABLE conversation_participants_0004 RENAME TO conversation_participants;
ALTER TABLE conversation_messages_0004 RENAME TO conversation_messages;

CREATE INDEX conversations_user_id ON conversations (user_id);
CREATE INDEX conversation_participants_user_id ON conversation_participants (user_id);
CREATE INDEX conversation_participants_inbox
    ON conversation_participants (user_id, last_message_date DESC, conversation_id DESC, starred, last_read_date)
    WHERE left_state = 0;
CREATE INDEX conversation_messages_user_id ON conversation_messages (user_id);
