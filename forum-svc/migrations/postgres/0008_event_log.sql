-- The per-user event log behind GET /api/events. Each user's events are numbered 1, 2, 3...
-- by event_counters, whose row the recording transaction updates: the row lock serialises one
-- user's events, so their ids commit in the order they were given, and a reader that sees event
-- N has seen every event before it (a global sequence could commit 10 before 9, and a client
-- resuming after 10 would lose 9). Rows older than the retention are swept; the counter stays,
-- so ids never go back.
CREATE TABLE event_counters (
    user_id       BIGINT NOT NULL PRIMARY KEY,
    last_event_id BIGINT NOT NULL
);

CREATE TABLE event_log (
    user_id         BIGINT NOT NULL,
    event_id        BIGINT NOT NULL,
    event_type      TEXT NOT NULL,
    conversation_id BIGINT NOT NULL,
    message_id      BIGINT NOT NULL,
    actor_id        BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (user_id, event_id)
);
-- The sweep reads the oldest rows first.
CREATE INDEX event_log_created_at ON event_log (created_at);

-- One-time tickets that open a stream from a browser (EventSource sends no headers): the SHA-256
-- of the ticket, bound to the API key (its hash) and the acting user, deleted when used.
CREATE TABLE event_tickets (
    ticket_hash  TEXT NOT NULL PRIMARY KEY,
    api_key_hash TEXT NOT NULL,
    user_id      BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX event_tickets_expires_at ON event_tickets (expires_at);
