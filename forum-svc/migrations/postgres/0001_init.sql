-- forum-svc schema (PostgreSQL). Times are Unix seconds (BIGINT), as the API shows them.

CREATE TABLE users (
    user_id  BIGINT PRIMARY KEY CHECK (user_id > 0),
    username TEXT   NOT NULL CHECK (username <> '')
);

-- The message aggregates (message_count, first/last message, start_date) are kept on the row by
-- the only writer of messages (seed), so that no request counts a million rows.
CREATE TABLE conversations (
    conversation_id   BIGINT PRIMARY KEY CHECK (conversation_id > 0),
    title             TEXT   NOT NULL,
    user_id           BIGINT NOT NULL REFERENCES users (user_id),
    start_date        BIGINT NOT NULL DEFAULT 0,
    message_count     BIGINT NOT NULL DEFAULT 0,
    first_message_id  BIGINT NOT NULL DEFAULT 0,
    last_message_id   BIGINT NOT NULL DEFAULT 0,
    last_message_date BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX conversations_user_id ON conversations (user_id);

-- One row per participant (the starter and every recipient), with the read state.
CREATE TABLE conversation_participants (
    conversation_id BIGINT NOT NULL REFERENCES conversations (conversation_id) ON DELETE CASCADE,
    user_id         BIGINT NOT NULL REFERENCES users (user_id),
    last_read_date  BIGINT NOT NULL DEFAULT 0 CHECK (last_read_date >= 0),
    PRIMARY KEY (conversation_id, user_id)
);
CREATE INDEX conversation_participants_user_id ON conversation_participants (user_id);

-- position is the 1-based rank of the message in (message_date, message_id) order within its
-- conversation: page n is the index range ((n-1)*per, n*per]. Negative values exist only inside
-- the seed transaction while positions are recomputed.
CREATE TABLE conversation_messages (
    message_id      BIGINT PRIMARY KEY CHECK (message_id > 0),
    conversation_id BIGINT NOT NULL REFERENCES conversations (conversation_id) ON DELETE CASCADE,
    user_id         BIGINT NOT NULL REFERENCES users (user_id),
    message         TEXT   NOT NULL,
    message_date    BIGINT NOT NULL CHECK (message_date >= 0),
    position        BIGINT NOT NULL CHECK (position <> 0),
    CONSTRAINT conversation_messages_position UNIQUE (conversation_id, position)
);
CREATE INDEX conversation_messages_user_id ON conversation_messages (user_id);

-- API keys: only the SHA-256 (hex) of the key is stored.
CREATE TABLE api_keys (
    key_hash   CHAR(64) PRIMARY KEY,
    key_type   TEXT     NOT NULL CHECK (key_type IN ('user', 'super', 'guest')),
    user_id    BIGINT   REFERENCES users (user_id),
    scopes     TEXT     NOT NULL DEFAULT '',
    active     BOOLEAN  NOT NULL DEFAULT TRUE,
    expires_at BIGINT,
    created_at BIGINT   NOT NULL,
    CHECK ((key_type = 'user') = (user_id IS NOT NULL))
);

-- Forum options: one row, one typed column per option.
CREATE TABLE forum_options (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    messages_per_page INTEGER NOT NULL DEFAULT 20 CHECK (messages_per_page BETWEEN 1 AND 100)
);
INSERT INTO forum_options (id) VALUES (1);
