package live

import (
	"context"
	"fmt"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// Coverage reads what live counting owns of guild: where its counting began and its gaps, filled
// or not, as stored. counting is false when the server was never counted live (search owns all
// of its messages).
func (s *Store) Coverage(ctx context.Context, guild uint64) (cov Coverage, counting bool, err error) {
	tx := s.db.WithContext(ctx)
	var since []int64
	if err := tx.Table("live_guilds").Where("guild_id = ?", id(guild)).Pluck("since_id", &since).Error; err != nil {
		return cov, false, fmt.Errorf("read live guild %d: %w", guild, err)
	}
	if len(since) == 0 {
		return cov, false, nil
	}
	cov.SinceID = uint64(since[0])
	var gaps []struct {
		MinID, MaxID int64
		Filled       bool
	}
	if err := tx.Table("live_gaps").Where("guild_id = ?", id(guild)).Order("min_id").Find(&gaps).Error; err != nil {
		return cov, false, fmt.Errorf("read live gaps of %d: %w", guild, err)
	}
	for _, g := range gaps {
		cov.Gaps = append(cov.Gaps, Gap{MinID: uint64(g.MinID), MaxID: uint64(g.MaxID), Filled: g.Filled})
	}
	return cov, true, nil
}

// GuildGap is a gap of one server.
type GuildGap struct {
	Guild uint64
	Gap   Gap
}

// UnfilledGaps lists the stored gaps not filled yet that end after from, by server and start.
func (s *Store) UnfilledGaps(ctx context.Context, from time.Time) ([]GuildGap, error) {
	var rows []struct {
		GuildID      string
		MinID, MaxID int64
	}
	err := s.db.WithContext(ctx).Table("live_gaps").Where("NOT filled AND max_id > ?", dbID(discord.SnowflakeAt(from))).
		Order("guild_id, min_id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read unfilled live gaps: %w", err)
	}
	out := make([]GuildGap, 0, len(rows))
	for _, r := range rows {
		g, err := parseID(r.GuildID)
		if err != nil {
			return nil, fmt.Errorf("live gap of %q: %w", r.GuildID, err)
		}
		out = append(out, GuildGap{Guild: g, Gap: Gap{MinID: uint64(r.MinID), MaxID: uint64(r.MaxID)}})
	}
	return out, nil
}

// Sums reads the stored counts of guild over the hours [from, to) added up per channel, the
// server's total under channel 0: what a report of those hours needs, summed by the database
// rather than read hour by hour.
func (s *Store) Sums(ctx context.Context, guild uint64, from, to int64) (map[uint64]int64, error) {
	var rows []struct {
		ChannelID string
		Messages  int64
	}
	err := s.db.WithContext(ctx).Table("live_counts").Select("channel_id, SUM(messages) AS messages").
		Where("guild_id = ? AND hour >= ? AND hour < ?", id(guild), from, to).Group("channel_id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("sum live counts: %w", err)
	}
	out := make(map[uint64]int64, len(rows))
	for _, r := range rows {
		var c uint64
		if r.ChannelID != "" {
			if c, err = parseID(r.ChannelID); err != nil {
				return nil, fmt.Errorf("live count channel %q: %w", r.ChannelID, err)
			}
		}
		out[c] = r.Messages
	}
	return out, nil
}

// Counted is what live counting holds of one server: where its counting began, and when its
// shard was last flushed (zero when no checkpoint of that shard is stored).
type Counted struct {
	SinceID uint64
	Flushed time.Time
}

// Counted lists the servers counted live (a live_guilds row each) by id, with the last flush of
// each one's shard: the checkpoint of shard (guild >> 22) % num_shards, by each stored
// checkpoint's own number of shards, the latest when several name the server (the number of
// shards changed).
func (s *Store) Counted(ctx context.Context) (map[string]Counted, error) {
	tx := s.db.WithContext(ctx)
	var cps []checkpointRow
	if err := tx.Table("live_checkpoints").Find(&cps).Error; err != nil {
		return nil, fmt.Errorf("read live checkpoints: %w", err)
	}
	var guilds []struct {
		GuildID string
		SinceID int64
	}
	if err := tx.Table("live_guilds").Find(&guilds).Error; err != nil {
		return nil, fmt.Errorf("read live guilds: %w", err)
	}
	out := make(map[string]Counted, len(guilds))
	for _, g := range guilds {
		gid, err := parseID(g.GuildID)
		if err != nil {
			return nil, fmt.Errorf("live guild %q: %w", g.GuildID, err)
		}
		c := Counted{SinceID: uint64(g.SinceID)}
		for _, cp := range cps {
			if cp.NumShards > 0 && shardOf(gid, cp.NumShards) == cp.Shard && cp.FlushedAt.After(c.Flushed) {
				c.Flushed = cp.FlushedAt.UTC()
			}
		}
		out[g.GuildID] = c
	}
	return out, nil
}
