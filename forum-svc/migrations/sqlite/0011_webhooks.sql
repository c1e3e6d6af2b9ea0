-- Signed webhooks and their outbox.
--
-- A webhook is a target URL, the event types it subscribes to (webhook_events; '*' is every
-- type) and the secret its deliveries are signed with. Disabling keeps it and its deliveries.
CREATE TABLE webhooks (
    webhook_id INTEGER PRIMARY KEY AUTOINCREMENT,
    url        TEXT    NOT NULL,
    secret     TEXT    NOT NULL,
    active     BOOLEAN NOT NULL DEFAULT TRUE,
    created_at BIGINT  NOT NULL
);

CREATE TABLE webhook_events (
    webhook_id BIGINT NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
    event_type TEXT   NOT NULL,
    PRIMARY KEY (webhook_id, event_type)
);
CREATE INDEX webhook_events_event_type ON webhook_events (event_type);

-- The outbox: one row per (webhook, change), written in the transaction of the change, so that
-- a rolled-back write leaves none and a committed one always has its rows. The deliveries of one
-- (webhook, conversation) go out one at a time in delivery_id order; a worker holds the one it
-- sends by a lease (lease_owner, lease_until: Unix milliseconds) so that no other replica sends
-- it meanwhile. payload is the body, kept with the first attempt's outcome so that every later
-- attempt sends the same bytes. Times are Unix milliseconds but event_at (the change's, seconds).
CREATE TABLE webhook_deliveries (
    delivery_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id      BIGINT  NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
    conversation_id BIGINT  NOT NULL,
    message_id      BIGINT  NOT NULL DEFAULT 0,
    actor_id        BIGINT  NOT NULL,
    event_type      TEXT    NOT NULL,
    event_at        BIGINT  NOT NULL,
    created_at      BIGINT  NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at BIGINT  NOT NULL,
    lease_owner     TEXT    NOT NULL DEFAULT '',
    lease_until     BIGINT  NOT NULL DEFAULT 0,
    payload         TEXT,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '',
    finished_at     BIGINT  NOT NULL DEFAULT 0
);
-- The pending deliveries of a stream, oldest first (what may be sent next), and the due ones.
CREATE INDEX webhook_deliveries_stream ON webhook_deliveries (webhook_id, conversation_id, delivery_id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, delivery_id);
