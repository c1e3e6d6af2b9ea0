-- The SQLite twin of postgres/0001_reports.sql (see the comments there).

CREATE TABLE catalog_servers (
    number   INTEGER PRIMARY KEY CHECK (number > 0),
    name     TEXT    NOT NULL,
    guild_id TEXT    NOT NULL UNIQUE
);

CREATE TABLE guilds (
    guild_id     TEXT PRIMARY KEY,
    icon         TEXT,
    banner       TEXT,
    banner_known BOOLEAN NOT NULL DEFAULT 0,
    metadata_at  DATETIME
);

CREATE TABLE daily_reports (
    guild_id       TEXT     NOT NULL,
    day            TEXT     NOT NULL CHECK (length(day) = 10),
    generated_at   DATETIME NOT NULL,
    status         TEXT     NOT NULL CHECK (status IN ('ok', 'stale')),
    error_code     TEXT,
    error_message  TEXT,
    total_messages INTEGER  NOT NULL CHECK (total_messages >= 0),
    PRIMARY KEY (guild_id, day)
);
CREATE INDEX daily_reports_day_idx ON daily_reports (day, guild_id);

CREATE TABLE daily_channel_counts (
    guild_id   TEXT    NOT NULL,
    day        TEXT    NOT NULL,
    channel_id TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    messages   INTEGER NOT NULL CHECK (messages >= 0),
    PRIMARY KEY (guild_id, day, channel_id),
    FOREIGN KEY (guild_id, day) REFERENCES daily_reports (guild_id, day) ON DELETE CASCADE
);
CREATE INDEX daily_channel_counts_day_idx ON daily_channel_counts (day, guild_id, channel_id, messages, name);

CREATE TABLE monthly_reports (
    guild_id       TEXT     NOT NULL,
    month          TEXT     NOT NULL CHECK (length(month) = 7),
    generated_at   DATETIME NOT NULL,
    status         TEXT     NOT NULL CHECK (status IN ('ok', 'stale')),
    error_code     TEXT,
    error_message  TEXT,
    total_messages INTEGER  NOT NULL CHECK (total_messages >= 0),
    PRIMARY KEY (guild_id, month)
);
CREATE INDEX monthly_reports_month_idx ON monthly_reports (month, guild_id);

CREATE TABLE monthly_channel_counts (
    guild_id   TEXT    NOT NULL,
    month      TEXT    NOT NULL,
    channel_id TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    messages   INTEGER NOT NULL CHECK (messages >= 0),
    PRIMARY KEY (guild_id, month, channel_id),
    FOREIGN KEY (guild_id, month) REFERENCES monthly_reports (guild_id, month) ON DELETE CASCADE
);
CREATE INDEX monthly_channel_counts_month_idx ON monthly_channel_counts (month, guild_id);

CREATE TABLE collector_state (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    refresh_minutes   INTEGER NOT NULL DEFAULT 10 CHECK (refresh_minutes > 0),
    generation        INTEGER NOT NULL DEFAULT 0,
    pass_started_at   DATETIME,
    pass_finished_at  DATETIME,
    last_good_pass_at DATETIME,
    last_error        TEXT
);
INSERT INTO collector_state (id) VALUES (1);
