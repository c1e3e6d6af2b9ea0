-- The SQLite twin of postgres/0003_live_counts.sql (see the comments there).

CREATE TABLE live_counts (
    guild_id   TEXT    NOT NULL,
    hour       INTEGER NOT NULL CHECK (hour >= 0),
    channel_id TEXT    NOT NULL,
    messages   INTEGER NOT NULL CHECK (messages >= 0),
    PRIMARY KEY (guild_id, hour, channel_id)
);

CREATE TABLE live_guilds (
    guild_id TEXT   NOT NULL PRIMARY KEY,
    since_id BIGINT NOT NULL CHECK (since_id > 0)
);

CREATE TABLE live_channels (
    guild_id   TEXT    NOT NULL,
    channel_id TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    thread     BOOLEAN NOT NULL,
    deleted    BOOLEAN NOT NULL DEFAULT 0,
    PRIMARY KEY (guild_id, channel_id)
);

CREATE TABLE live_gaps (
    guild_id    TEXT     NOT NULL,
    min_id      BIGINT   NOT NULL CHECK (min_id >= 0),
    max_id      BIGINT   NOT NULL,
    filled      BOOLEAN  NOT NULL DEFAULT 0,
    recorded_at DATETIME NOT NULL,
    PRIMARY KEY (guild_id, min_id),
    CHECK (max_id > min_id)
);

-- shard is the rowid (INTEGER PRIMARY KEY): never NULL.
CREATE TABLE live_checkpoints (
    shard      INTEGER  PRIMARY KEY CHECK (shard >= 0),
    num_shards INTEGER  NOT NULL CHECK (num_shards > shard),
    session_id TEXT     NOT NULL,
    seq        BIGINT   NOT NULL CHECK (seq >= 0),
    resume_url TEXT     NOT NULL,
    flushed_at DATETIME NOT NULL
);
