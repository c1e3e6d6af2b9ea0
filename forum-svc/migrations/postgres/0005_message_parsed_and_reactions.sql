-- A message's HTML, rendered from its BB code when the message is written (a page of messages
-- would otherwise render every message on every read). NULL: a message written before this
-- column, rendered when read.
ALTER TABLE conversation_messages ADD COLUMN message_parsed TEXT;

-- The sum of the scores of the reactions to the message, kept in the transaction that changes
-- them, under the message's row lock.
ALTER TABLE conversation_messages ADD COLUMN reaction_score BIGINT NOT NULL DEFAULT 0;

-- One reaction per user and message; reacting again replaces it.
CREATE TABLE conversation_message_reactions (
    message_id    BIGINT NOT NULL REFERENCES conversation_messages (message_id) ON DELETE CASCADE,
    user_id       BIGINT NOT NULL REFERENCES users (user_id),
    reaction_id   BIGINT NOT NULL CHECK (reaction_id > 0),
    reaction_date BIGINT NOT NULL CHECK (reaction_date >= 0),
    PRIMARY KEY (message_id, user_id)
);
