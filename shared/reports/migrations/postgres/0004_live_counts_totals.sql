-- The servers' hourly totals of a range of hours (stats-svc's hourly activity of all servers, and
-- days of a time zone summed from hours): the primary key leads with the server, and an index on
-- the hour alone would visit every channel's row of the range (51 rows an hour per server of 50
-- channels) to keep one. A partial index of the totals rows, covering the columns the sum reads,
-- is an index-only scan of exactly them.
CREATE INDEX live_counts_totals ON live_counts (hour, guild_id) INCLUDE (messages) WHERE channel_id = '';
