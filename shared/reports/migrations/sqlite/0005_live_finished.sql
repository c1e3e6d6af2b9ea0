-- The SQLite twin of postgres/0005_live_finished.sql (see the comments there).

ALTER TABLE live_channels ADD COLUMN channel_type INTEGER;

ALTER TABLE live_guilds ADD COLUMN channels_listed BOOLEAN NOT NULL DEFAULT 0;

CREATE TABLE live_finished (
    guild_id    TEXT     NOT NULL,
    period      TEXT     NOT NULL,
    finished_at DATETIME NOT NULL,
    PRIMARY KEY (guild_id, period)
);
