-- A recorded Idempotency-Key answer names the conversation it shows (the one started, or the one
-- replied to) and goes with it: when the last participant leaves and the conversation is
-- deleted, ON DELETE CASCADE deletes its answers in the same transaction, so that a replay no
-- longer shows the title and messages of a conversation that no longer exists. The index serves
-- that cascade. NULL: a claim whose write has not recorded its answer yet.
ALTER TABLE idempotency_keys ADD COLUMN conversation_id BIGINT
    REFERENCES conversations (conversation_id) ON DELETE CASCADE;
CREATE INDEX idempotency_keys_conversation_id ON idempotency_keys (conversation_id);

-- Answers recorded before: the conversation is read from the answer itself; those of
-- conversations deleted since go now.
UPDATE idempotency_keys SET conversation_id = (
    SELECT c.conversation_id FROM conversations c
    WHERE c.conversation_id = COALESCE(json_extract(idempotency_keys.body, '$.conversation.conversation_id'),
                                       json_extract(idempotency_keys.body, '$.message.conversation_id')))
WHERE status = 200;
DELETE FROM idempotency_keys WHERE status = 200 AND conversation_id IS NULL;
