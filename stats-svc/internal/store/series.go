package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/query"
	"forumstats.local/stats-svc/internal/report"
)

// Series composes the daily-series answer of q at the moment now from two
// set-based reads in the same consistent view: the daily reports of the range
// (36,600 small rows for 100 servers over 366 days, by the (day, guild_id)
// index) and, for one server, its daily channel counts.
func (s *Store) Series(ctx context.Context, q query.Series, now time.Time) (report.Answer, error) {
	var out report.Answer
	err := s.read(ctx, func(tx *gorm.DB) error {
		st, err := loadState(tx)
		if err != nil {
			return err
		}
		servers, err := s.loadServers(tx, q.Server)
		if err != nil {
			return err
		}
		data := report.SeriesData{RefreshMinutes: st.RefreshMinutes, Servers: servers}
		if len(servers) > 0 {
			var guild string
			if q.Server != "" {
				guild = servers[0].GuildID
			}
			filter, args := guildFilter(guild, q.From.String(), q.To.String())
			data.Reports, err = scanAll(tx.Raw(reportsSQL(reports.KindDay, "BETWEEN ? AND ?")+filter, args...), scanReport)
			if err != nil {
				return fmt.Errorf("read daily reports: %w", err)
			}
			if guild != "" {
				data.Channels, err = scanAll(tx.Raw("SELECT "+reports.KindDay.ChannelColumns()+" FROM "+
					reports.KindDay.Tables().Channels+" WHERE day BETWEEN ? AND ?"+filter, args...), scanChannelRow)
				if err != nil {
					return fmt.Errorf("read daily channels: %w", err)
				}
			}
		}
		a, err := report.Series(q, now, data)
		a.Generation = st.Generation
		out = a
		return err
	})
	return out, err
}

func scanChannelRow(rows *sql.Rows, r *reports.ChannelRow) error {
	return rows.Scan(&r.GuildID, &r.Period, &r.ChannelID, &r.Name, &r.Messages)
}
