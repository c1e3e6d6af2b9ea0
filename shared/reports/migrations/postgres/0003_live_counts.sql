-- Live counting: messages counted from Discord's gateway as they are posted, kept per server,
-- channel and UTC hour, with the coverage that says which messages live counting owns and the
-- checkpoint each gateway shard resumes from. collector-svc writes these tables; reports are
-- composed from them and from searches of what they do not own.
--
-- Ids stay text as in the report tables. An hour is an integer: hours since the Unix epoch, UTC.
-- Every Moscow day is 24 whole UTC hours (UTC+3), so a day is a range of hours; an integer is 4
-- bytes, compares and subtracts alike in both dialects, and needs no zone handling in either
-- driver. Snowflake edges are bigint: they are compared as numbers, never as text.

-- Messages of one server in one UTC hour: channel_id '' is the server's total (threads included,
-- as a guild-wide search counts them), any other channel_id the messages posted in that channel
-- itself (a thread's messages count in the total only).
CREATE TABLE live_counts (
    guild_id   text    NOT NULL,
    hour       integer NOT NULL CHECK (hour >= 0),
    channel_id text    NOT NULL,
    messages   integer NOT NULL CHECK (messages >= 0),
    PRIMARY KEY (guild_id, hour, channel_id)
);

-- A server's live counting began at its first GUILD_CREATE: messages with ids below since_id
-- (the first snowflake of that millisecond) were never counted live; search owns them.
CREATE TABLE live_guilds (
    guild_id text   PRIMARY KEY,
    since_id bigint NOT NULL CHECK (since_id > 0)
);

-- Channels and threads as the gateway last described them, for the names in reports.
CREATE TABLE live_channels (
    guild_id   text    NOT NULL,
    channel_id text    NOT NULL,
    name       text    NOT NULL,
    thread     boolean NOT NULL,
    deleted    boolean NOT NULL DEFAULT false,
    PRIMARY KEY (guild_id, channel_id)
);

-- A time the gateway was not counting a server: messages with min_id < id < max_id (the bounds
-- as the message search takes them). Until filled, search owns them; filling adds the search's
-- counts to live_counts and sets filled in one transaction.
CREATE TABLE live_gaps (
    guild_id    text        NOT NULL,
    min_id      bigint      NOT NULL CHECK (min_id >= 0),
    max_id      bigint      NOT NULL,
    filled      boolean     NOT NULL DEFAULT false,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (guild_id, min_id),
    CHECK (max_id > min_id)
);

-- Where each gateway shard resumes: written in the transaction of the counts it covers, so that
-- counts and checkpoint move together. flushed_at is when the flushed events had all been
-- received: a session that cannot resume leaves a gap from it.
CREATE TABLE live_checkpoints (
    shard      integer     PRIMARY KEY CHECK (shard >= 0),
    num_shards integer     NOT NULL CHECK (num_shards > shard),
    session_id text        NOT NULL,
    seq        bigint      NOT NULL CHECK (seq >= 0),
    resume_url text        NOT NULL,
    flushed_at timestamptz NOT NULL
);
