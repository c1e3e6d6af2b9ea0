-- The servers' hourly totals of a range of hours, as on PostgreSQL: a partial index of the totals
-- rows (SQLite has no INCLUDE: messages is a key column, so that the index covers the sum).
CREATE INDEX live_counts_totals ON live_counts (hour, guild_id, messages) WHERE channel_id = '';
