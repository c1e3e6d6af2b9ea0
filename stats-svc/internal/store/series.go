package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/query"
)

// Series composes the daily-series answer of q at the moment now from two
// set-based reads in the same consistent view: the daily reports of the range
// (36,600 small rows for 100 servers over 366 days, by the (day, guild_id)
// index) and, for one server, its daily channel counts. In a zone other than
// Moscow's the days are composed from the live counts (seriesInZone).
func (s *Store) Series(ctx context.Context, q query.Series, now time.Time) (answers.Answer, error) {
	return s.answer(ctx, q.Server, func(v view, st reports.ReaderState, servers []answers.Server, guild string) (answers.Answer, error) {
		data := answers.SeriesData{RefreshMinutes: st.RefreshMinutes, Servers: servers}
		if len(servers) > 0 && !q.Zone.Moscow() {
			if err := s.seriesInZone(v, q, guild, &data); err != nil {
				return answers.Answer{}, err
			}
		} else if len(servers) > 0 {
			days := q.From.DaysUntil(q.To) + 1
			filter, args := guildFilter(guild, q.From.String(), q.To.String())
			var err error
			data.Reports, err = v.reports(len(servers)*days, reportsSQL(reports.KindDay, "BETWEEN ? AND ?")+filter, args...)
			if err != nil {
				return answers.Answer{}, fmt.Errorf("read daily reports: %w", err)
			}
			if guild != "" {
				data.Channels, err = scanAll(v.tx.Raw("SELECT "+reports.KindDay.ChannelColumns()+" FROM "+
					reports.KindDay.Tables().Channels+" WHERE day BETWEEN ? AND ?"+filter, args...), 0, scanChannelRow)
				if err != nil {
					return answers.Answer{}, fmt.Errorf("read daily channels: %w", err)
				}
			}
		}
		return answers.Series(q, now, data)
	})
}

func scanChannelRow(rows *sql.Rows, r *reports.ChannelRow) error {
	return rows.Scan(&r.GuildID, &r.Period, &r.ChannelID, &r.Name, &r.Messages)
}
