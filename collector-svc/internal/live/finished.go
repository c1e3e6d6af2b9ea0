package live

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm/clause"

	"forumstats.local/collector-svc/internal/discord"
)

// GuildChannels is the server's message-bearing channels (threads left out, as a REST channel
// list leaves them out) as the gateway last described them, ordered by id. listed is false while
// no GUILD_CREATE has listed the server's channels with their types: live_channels may then lack
// some, and the caller lists them over REST.
func (s *Store) GuildChannels(ctx context.Context, guild uint64) (channels []discord.Channel, listed bool, err error) {
	tx := s.db.WithContext(ctx)
	var flags []bool
	if err := tx.Table("live_guilds").Where("guild_id = ?", id(guild)).Pluck("channels_listed", &flags).Error; err != nil {
		return nil, false, fmt.Errorf("read live guild %d: %w", guild, err)
	}
	if len(flags) == 0 || !flags[0] {
		return nil, false, nil
	}
	var rows []struct {
		ChannelID   string
		Name        string
		ChannelType *int
	}
	err = tx.Table("live_channels").Select("channel_id, name, channel_type").
		Where("guild_id = ? AND NOT thread AND NOT deleted", id(guild)).Find(&rows).Error
	if err != nil {
		return nil, false, fmt.Errorf("read live channels of %d: %w", guild, err)
	}
	for _, r := range rows {
		if r.ChannelType == nil {
			// Written before the types were kept and not listed since: not known well enough.
			return nil, false, nil
		}
		if discord.MessageBearing(*r.ChannelType) {
			channels = append(channels, discord.Channel{ID: r.ChannelID, Name: r.Name, Type: *r.ChannelType})
		}
	}
	slices.SortFunc(channels, func(a, b discord.Channel) int { return compareIDs(a.ID, b.ID) })
	return channels, true, nil
}

// compareIDs orders snowflakes held as text by number.
func compareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Finish records that the report of the server's closed period (a day or a month label) is
// final: the REST pass leaves it to the reporter of live counts.
func (s *Store) Finish(ctx context.Context, guild uint64, period string, at time.Time) error {
	row := map[string]any{"guild_id": id(guild), "period": period, "finished_at": storedTime(at)}
	err := s.db.WithContext(ctx).Table("live_finished").Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "guild_id"}, {Name: "period"}},
		DoUpdates: clause.AssignmentColumns([]string{"finished_at"}),
	}).Create(row).Error
	if err != nil {
		return fmt.Errorf("record finished period %s of %d: %w", period, guild, err)
	}
	return nil
}

// Unfinish forgets that the server's period is final (a later check of it differed): the REST
// pass counts it again.
func (s *Store) Unfinish(ctx context.Context, guild uint64, period string) error {
	err := s.db.WithContext(ctx).Exec("DELETE FROM live_finished WHERE guild_id = ? AND period = ?", id(guild), period).Error
	if err != nil {
		return fmt.Errorf("forget finished period %s of %d: %w", period, guild, err)
	}
	return nil
}

// Finished lists, by server id, which of periods are finished (Finish).
func (s *Store) Finished(ctx context.Context, periods []string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	if len(periods) == 0 {
		return out, nil
	}
	var rows []struct{ GuildID, Period string }
	if err := s.db.WithContext(ctx).Table("live_finished").Select("guild_id, period").Where("period IN ?", periods).
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read finished periods: %w", err)
	}
	for _, r := range rows {
		if out[r.GuildID] == nil {
			out[r.GuildID] = map[string]bool{}
		}
		out[r.GuildID][r.Period] = true
	}
	return out, nil
}

// FinishedOf tells which of periods are finished for one server.
func (s *Store) FinishedOf(ctx context.Context, guild uint64, periods []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(periods) == 0 {
		return out, nil
	}
	var got []string
	if err := s.db.WithContext(ctx).Table("live_finished").Where("guild_id = ? AND period IN ?", id(guild), periods).
		Pluck("period", &got).Error; err != nil {
		return nil, fmt.Errorf("read finished periods of %d: %w", guild, err)
	}
	for _, p := range got {
		out[p] = true
	}
	return out, nil
}
