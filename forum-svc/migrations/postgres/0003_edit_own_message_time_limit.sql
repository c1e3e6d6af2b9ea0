-- editOwnMessageTimeLimit: how many minutes after its date an author may still edit their message
-- (0: no limit, as before). Bounded by a year of minutes (conversation.MaxEditOwnMessageTimeLimit).
ALTER TABLE forum_options ADD COLUMN edit_own_message_time_limit INTEGER NOT NULL DEFAULT 0
    CHECK (edit_own_message_time_limit BETWEEN 0 AND 525600);
