-- What lets a REST pass leave a server counted live alone when it has nothing to count.
--
-- channel_type is the gateway's channel type (0 text, 2 voice, 4 category, 5 announcement, 11
-- a thread, ...), so that the channels of a report (those that can hold messages) come from the
-- gateway instead of a REST listing; NULL for a row written before it was kept.
ALTER TABLE live_channels ADD COLUMN channel_type integer;

-- channels_listed: a GUILD_CREATE listed the server's channels with their types since the types
-- were kept, so live_channels holds all of them; until then reports list them over REST.
ALTER TABLE live_guilds ADD COLUMN channels_listed boolean NOT NULL DEFAULT false;

-- A closed period (a Moscow day 'YYYY-MM-DD' or month 'YYYY-MM') of a server counted live whose
-- report is final: its day check found the live total equal to the search's (a month: every day
-- of it counted live was). The REST pass leaves such a report alone; the reporter of live counts
-- rewrites it from live counts when a later deletion changes its hours.
CREATE TABLE live_finished (
    guild_id    text        NOT NULL,
    period      text        NOT NULL,
    finished_at timestamptz NOT NULL,
    PRIMARY KEY (guild_id, period)
);
