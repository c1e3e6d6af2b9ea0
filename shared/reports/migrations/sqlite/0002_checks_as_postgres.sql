-- 0001 drifted from postgres/0001_reports.sql: catalog_servers.guild_id had no check, days and
-- months were checked by length only, and guilds.guild_id admitted NULL (a SQLite primary key that
-- is not INTEGER does). SQLite cannot alter a constraint, so the four tables are rebuilt with the
-- constraints of the PostgreSQL schema; PostgreSQL needs no migration.
--
-- Rows go through TEMP copies and come back into tables of the original names, so the stored
-- schema reads as written here. Foreign keys stay on (the runner's transaction cannot turn them
-- off): children are dropped before their parents, whose implicit DELETE then has nothing to
-- cascade to, and parents are refilled before their children. A stored row that breaks a new
-- check fails the migration, which rolls back whole.

CREATE TEMP TABLE catalog_servers_0002 AS SELECT * FROM catalog_servers;
CREATE TEMP TABLE guilds_0002 AS SELECT * FROM guilds;
CREATE TEMP TABLE daily_reports_0002 AS SELECT * FROM daily_reports;
CREATE TEMP TABLE daily_channel_counts_0002 AS SELECT * FROM daily_channel_counts;
CREATE TEMP TABLE monthly_reports_0002 AS SELECT * FROM monthly_reports;
CREATE TEMP TABLE monthly_channel_counts_0002 AS SELECT * FROM monthly_channel_counts;

DROP TABLE catalog_servers;
DROP TABLE guilds;
DROP TABLE daily_channel_counts;
DROP TABLE daily_reports;
DROP TABLE monthly_channel_counts;
DROP TABLE monthly_reports;

CREATE TABLE catalog_servers (
    number   INTEGER PRIMARY KEY CHECK (number > 0),
    name     TEXT    NOT NULL,
    -- PostgreSQL: guild_id ~ '^[0-9]{1,20}$'.
    guild_id TEXT    NOT NULL UNIQUE CHECK (length(guild_id) BETWEEN 1 AND 20 AND guild_id NOT GLOB '*[^0-9]*')
);
INSERT INTO catalog_servers (number, name, guild_id)
    SELECT number, name, guild_id FROM temp.catalog_servers_0002;

CREATE TABLE guilds (
    guild_id     TEXT NOT NULL PRIMARY KEY,
    icon         TEXT,
    banner       TEXT,
    banner_known BOOLEAN NOT NULL DEFAULT 0,
    metadata_at  DATETIME
);
INSERT INTO guilds (guild_id, icon, banner, banner_known, metadata_at)
    SELECT guild_id, icon, banner, banner_known, metadata_at FROM temp.guilds_0002;

CREATE TABLE daily_reports (
    guild_id       TEXT     NOT NULL,
    -- PostgreSQL: day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'.
    day            TEXT     NOT NULL CHECK (day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    generated_at   DATETIME NOT NULL,
    status         TEXT     NOT NULL CHECK (status IN ('ok', 'stale')),
    error_code     TEXT,
    error_message  TEXT,
    total_messages INTEGER  NOT NULL CHECK (total_messages >= 0),
    PRIMARY KEY (guild_id, day)
);
INSERT INTO daily_reports (guild_id, day, generated_at, status, error_code, error_message, total_messages)
    SELECT guild_id, day, generated_at, status, error_code, error_message, total_messages
    FROM temp.daily_reports_0002;
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
INSERT INTO daily_channel_counts (guild_id, day, channel_id, name, messages)
    SELECT guild_id, day, channel_id, name, messages FROM temp.daily_channel_counts_0002;
CREATE INDEX daily_channel_counts_day_idx ON daily_channel_counts (day, guild_id, channel_id, messages, name);

CREATE TABLE monthly_reports (
    guild_id       TEXT     NOT NULL,
    -- PostgreSQL: month ~ '^[0-9]{4}-[0-9]{2}$'.
    month          TEXT     NOT NULL CHECK (month GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]'),
    generated_at   DATETIME NOT NULL,
    status         TEXT     NOT NULL CHECK (status IN ('ok', 'stale')),
    error_code     TEXT,
    error_message  TEXT,
    total_messages INTEGER  NOT NULL CHECK (total_messages >= 0),
    PRIMARY KEY (guild_id, month)
);
INSERT INTO monthly_reports (guild_id, month, generated_at, status, error_code, error_message, total_messages)
    SELECT guild_id, month, generated_at, status, error_code, error_message, total_messages
    FROM temp.monthly_reports_0002;
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
INSERT INTO monthly_channel_counts (guild_id, month, channel_id, name, messages)
    SELECT guild_id, month, channel_id, name, messages FROM temp.monthly_channel_counts_0002;
CREATE INDEX monthly_channel_counts_month_idx ON monthly_channel_counts (month, guild_id);

DROP TABLE temp.catalog_servers_0002;
DROP TABLE temp.guilds_0002;
DROP TABLE temp.daily_reports_0002;
DROP TABLE temp.daily_channel_counts_0002;
DROP TABLE temp.monthly_reports_0002;
DROP TABLE temp.monthly_channel_counts_0002;
