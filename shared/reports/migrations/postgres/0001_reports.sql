-- Reports written by collector-svc and read by stats-svc. Days and months are Moscow-calendar
-- strings ('YYYY-MM-DD', 'YYYY-MM'): fixed width, so they sort and compare as text in both
-- dialects, and MAX(day || name) yields the newest name of a channel in one aggregate.

CREATE TABLE catalog_servers (
    number   integer PRIMARY KEY CHECK (number > 0),
    name     text    NOT NULL,
    guild_id text    NOT NULL UNIQUE CHECK (guild_id ~ '^[0-9]{1,20}$')
);

CREATE TABLE guilds (
    guild_id     text PRIMARY KEY,
    icon         text,
    banner       text,
    -- false when the metadata predates banner collection: the banner link stays null.
    banner_known boolean NOT NULL DEFAULT false,
    metadata_at  timestamptz
);

CREATE TABLE daily_reports (
    guild_id       text        NOT NULL,
    day            text        NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    generated_at   timestamptz NOT NULL,
    status         text        NOT NULL CHECK (status IN ('ok', 'stale')),
    error_code     text,
    error_message  text,
    total_messages bigint      NOT NULL CHECK (total_messages >= 0),
    PRIMARY KEY (guild_id, day)
);
CREATE INDEX daily_reports_day_idx ON daily_reports (day, guild_id);

CREATE TABLE daily_channel_counts (
    guild_id   text   NOT NULL,
    day        text   NOT NULL,
    channel_id text   NOT NULL,
    name       text   NOT NULL,
    messages   bigint NOT NULL CHECK (messages >= 0),
    PRIMARY KEY (guild_id, day, channel_id),
    FOREIGN KEY (guild_id, day) REFERENCES daily_reports (guild_id, day) ON DELETE CASCADE
);
-- Covering index for the all-servers range aggregate (index-only scan by day).
CREATE INDEX daily_channel_counts_day_idx ON daily_channel_counts (day, guild_id, channel_id) INCLUDE (messages, name);

CREATE TABLE monthly_reports (
    guild_id       text        NOT NULL,
    month          text        NOT NULL CHECK (month ~ '^[0-9]{4}-[0-9]{2}$'),
    generated_at   timestamptz NOT NULL,
    status         text        NOT NULL CHECK (status IN ('ok', 'stale')),
    error_code     text,
    error_message  text,
    total_messages bigint      NOT NULL CHECK (total_messages >= 0),
    PRIMARY KEY (guild_id, month)
);
CREATE INDEX monthly_reports_month_idx ON monthly_reports (month, guild_id);

CREATE TABLE monthly_channel_counts (
    guild_id   text   NOT NULL,
    month      text   NOT NULL,
    channel_id text   NOT NULL,
    name       text   NOT NULL,
    messages   bigint NOT NULL CHECK (messages >= 0),
    PRIMARY KEY (guild_id, month, channel_id),
    FOREIGN KEY (guild_id, month) REFERENCES monthly_reports (guild_id, month) ON DELETE CASCADE
);
CREATE INDEX monthly_channel_counts_month_idx ON monthly_channel_counts (month, guild_id);

-- One row: what the collector last did, and the data generation that readers key caches by.
CREATE TABLE collector_state (
    id                integer PRIMARY KEY CHECK (id = 1),
    refresh_minutes   integer NOT NULL DEFAULT 10 CHECK (refresh_minutes > 0),
    generation        bigint  NOT NULL DEFAULT 0,
    pass_started_at   timestamptz,
    pass_finished_at  timestamptz,
    last_good_pass_at timestamptz,
    last_error        text
);
INSERT INTO collector_state (id) VALUES (1);
