-- The number of a message's attachments, kept in the transaction that attaches files to it (or
-- deletes one), so that a page of messages reads one column a message instead of counting its
-- attachments. Messages written before it take their count from the attachments they have.
ALTER TABLE conversation_messages ADD COLUMN attach_count BIGINT NOT NULL DEFAULT 0 CHECK (attach_count >= 0);
UPDATE conversation_messages SET attach_count =
    (SELECT COUNT(*) FROM attachments a WHERE a.message_id = conversation_messages.message_id);
