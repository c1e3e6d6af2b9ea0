-- The servers' hourly totals of a range of hours (stats-svc's hourly activity of all servers, and
-- days of a time zone summed from hours): the primary key leads with the server, and an index on
-- the hour alone would visit every channel's row of the range (51 rows an hour per server of 50
-- channels) to keep one. A partial index of the totals rows, covering the columns the sum reads,
-- is an index-only scan of exactly them. Measured 2026-11-26 on 100 servers × 50 channels × 54
-- days of hours (6.6 M rows; go run ./tools/bench/stats -activity-only -keep, then EXPLAIN
-- ANALYZE of the all-servers 31-day sum, load average 7): 25–27 ms with this index (74,400 index
-- entries, no heap fetch), 457–562 ms without (a parallel scan of the table).
CREATE INDEX live_counts_totals ON live_counts (hour, guild_id) INCLUDE (messages) WHERE channel_id = '';
