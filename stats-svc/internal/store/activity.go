package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/query"
)

// Activity composes the hourly activity answer of q at the moment now, in one consistent view:
// the live coverage of the servers, and the hours' counts. All servers: the servers' totals
// summed per hour in the database (100 servers × 744 hours stay there), by the partial index of
// the totals (hour, guild_id, messages) WHERE channel_id = ”; one server: its rows of the
// hours by the primary key, and its channels' names.
func (s *Store) Activity(ctx context.Context, q query.Activity, now time.Time) (answers.Answer, error) {
	return s.answer(ctx, q.Server, func(v view, _ reports.ReaderState, servers []answers.Server, guild string) (answers.Answer, error) {
		data := answers.ActivityData{Servers: servers}
		if len(servers) == 0 {
			return answers.Activity(q, now, data)
		}
		first, end := q.Hours()
		var err error
		if data.Coverage, err = coverage(v, guild, first, end); err != nil {
			return answers.Answer{}, err
		}
		// ORDER BY, not MAX: the column keeps its type, which SQLite's driver needs to give a time.
		var flushed []time.Time
		if err := v.tx.Raw("SELECT flushed_at FROM live_checkpoints ORDER BY flushed_at DESC LIMIT 1").Scan(&flushed).Error; err != nil {
			return answers.Answer{}, fmt.Errorf("read live checkpoints: %w", err)
		}
		if len(flushed) > 0 {
			data.FlushedAt = &flushed[0]
		}
		if guild == "" {
			data.Counts, err = scanAll(v.tx.Raw(`SELECT hour, CAST(SUM(messages) AS BIGINT) FROM live_counts
WHERE channel_id = '' AND hour >= ? AND hour < ? AND guild_id IN (SELECT guild_id FROM catalog_servers)
GROUP BY hour`, first, end), int(end-first), func(rows *sql.Rows, c *answers.HourCount) error {
				return rows.Scan(&c.Hour, &c.Messages)
			})
		} else {
			data.Counts, err = scanAll(v.tx.Raw(`SELECT hour, channel_id, messages FROM live_counts
WHERE guild_id = ? AND hour >= ? AND hour < ?`, guild, first, end), int(end-first)*8, func(rows *sql.Rows, c *answers.HourCount) error {
				return rows.Scan(&c.Hour, &c.ChannelID, &c.Messages)
			})
			if err == nil {
				data.Names, err = channelNames(v, guild)
			}
		}
		if err != nil {
			return answers.Answer{}, fmt.Errorf("read live counts: %w", err)
		}
		return answers.Activity(q, now, data)
	})
}

// seriesInZone reads what a series in a zone other than Moscow's is composed from: the live
// coverage, and the counts summed per server (and, for one server, channel) and day of the zone
// in the database. A run of hours of one offset is one GROUP BY of (hour + offset) div 24, the
// day's number; a day that a change of offset cuts comes in two parts the composer adds.
func (s *Store) seriesInZone(v view, q query.Series, guild string, data *answers.SeriesData) error {
	first, _ := q.Zone.Hours(q.From, q.From)
	_, end := q.Zone.Hours(q.To, q.To)
	var err error
	if data.Coverage, err = coverage(v, guild, first, end); err != nil {
		return err
	}
	channels := ""
	if guild != "" {
		channels = "channel_id, "
		if data.Names, err = channelNames(v, guild); err != nil {
			return err
		}
	}
	for _, seg := range q.Zone.Segments(first, end) {
		// The offset is a small integer of ours (whole hours, -12..14), written into the text so
		// that the grouped expression is the selected one in both dialects.
		day := "(hour + " + strconv.FormatInt(seg.Offset+24, 10) + ") / 24 - 1"
		where := "hour >= ? AND hour < ?"
		args := []any{seg.From, seg.To}
		if guild != "" {
			where = "guild_id = ? AND " + where
			args = append([]any{guild}, args...)
		} else {
			where += " AND channel_id = ''"
		}
		rows, err := scanAll(v.tx.Raw("SELECT guild_id, "+channels+day+", CAST(SUM(messages) AS BIGINT) FROM live_counts WHERE "+
			where+" GROUP BY guild_id, "+channels+day, args...), 0, func(rows *sql.Rows, c *answers.DayCount) error {
			if guild != "" {
				return rows.Scan(&c.GuildID, &c.ChannelID, &c.Day, &c.Messages)
			}
			return rows.Scan(&c.GuildID, &c.Day, &c.Messages)
		})
		if err != nil {
			return fmt.Errorf("read live counts: %w", err)
		}
		data.DayCounts = append(data.DayCounts, rows...)
	}
	return nil
}

// coverage reads where each server's live counting began and its unfilled gaps that reach into
// the hours [first, end) (guild "": every server).
func coverage(v view, guild string, first, end int64) (map[string]reports.LiveCoverage, error) {
	filter, args := guildFilter(guild)
	type since struct {
		GuildID string
		SinceID int64
	}
	starts, err := scanAll(v.tx.Raw("SELECT guild_id, since_id FROM live_guilds WHERE 1 = 1"+filter, args...), 0,
		func(rows *sql.Rows, r *since) error { return rows.Scan(&r.GuildID, &r.SinceID) })
	if err != nil {
		return nil, fmt.Errorf("read live guilds: %w", err)
	}
	out := make(map[string]reports.LiveCoverage, len(starts))
	for _, r := range starts {
		out[r.GuildID] = reports.LiveCoverage{Counting: true, SinceID: uint64(r.SinceID)}
	}
	type gap struct {
		GuildID      string
		MinID, MaxID int64
	}
	// Snowflakes of 2015..2099 fit a bigint; the hours' bounds are compared as numbers.
	lo, hi := int64(min(reports.HourFirstID(first), 1<<63-1)), int64(min(reports.HourFirstID(end), 1<<63-1))
	filter, args = guildFilter(guild, hi, lo)
	gaps, err := scanAll(v.tx.Raw("SELECT guild_id, min_id, max_id FROM live_gaps WHERE NOT filled AND min_id < ? AND max_id > ?"+filter, args...), 0,
		func(rows *sql.Rows, r *gap) error { return rows.Scan(&r.GuildID, &r.MinID, &r.MaxID) })
	if err != nil {
		return nil, fmt.Errorf("read live gaps: %w", err)
	}
	for _, g := range gaps {
		c, ok := out[g.GuildID]
		if !ok {
			continue // never counted: missing whatever its gaps
		}
		c.Gaps = append(c.Gaps, reports.LiveGap{MinID: uint64(g.MinID), MaxID: uint64(g.MaxID)})
		out[g.GuildID] = c
	}
	return out, nil
}

// channelNames reads the names of a server's channels as the gateway last described them.
func channelNames(v view, guild string) (map[string]string, error) {
	type named struct{ ID, Name string }
	rows, err := scanAll(v.tx.Raw("SELECT channel_id, name FROM live_channels WHERE guild_id = ?", guild), 0,
		func(rows *sql.Rows, r *named) error { return rows.Scan(&r.ID, &r.Name) })
	if err != nil {
		return nil, fmt.Errorf("read live channels: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.Name
	}
	return out, nil
}
