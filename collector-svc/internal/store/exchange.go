package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/shared/reports"
)

// ImportStats counts what an import wrote.
type ImportStats struct {
	Catalog, Guilds, Daily, Monthly int
	CatalogReplaced                 bool
}

// Import writes a validated file in one transaction: refreshMinutes when present, the catalog
// when present (replacing it), guild metadata and reports upserted (each report whole: its
// channels replace the stored ones). Importing the same file again changes nothing.
func (s *Store) Import(ctx context.Context, f *reportfile.File) (ImportStats, error) {
	st := ImportStats{Guilds: len(f.Guilds), Daily: len(f.Daily), Monthly: len(f.Monthly)}
	err := s.write(ctx, func(tx *gorm.DB, bump func() error) error {
		if f.RefreshMinutes != nil {
			if _, err := setRefreshMinutes(tx, *f.RefreshMinutes); err != nil {
				return err
			}
		}
		if f.Catalog != nil {
			if err := replaceCatalog(tx, f.Catalog); err != nil {
				return err
			}
			st.Catalog, st.CatalogReplaced = len(f.Catalog), true
		}
		guilds := make([]reports.Guild, len(f.Guilds))
		for i, g := range f.Guilds {
			guilds[i] = reports.Guild{GuildID: g.GuildID, Icon: g.Icon, Banner: g.Banner, BannerKnown: g.BannerKnown}
			if g.MetadataAt != nil {
				at := storedTime(*g.MetadataAt)
				guilds[i].MetadataAt = &at
			}
		}
		if err := upsertGuilds(tx, guilds); err != nil {
			return err
		}
		daily, dailyChannels := fromFile(f.Daily)
		if err := writeReports(tx, reports.KindDay, daily, dailyChannels); err != nil {
			return err
		}
		monthly, monthlyChannels := fromFile(f.Monthly)
		if err := writeReports(tx, reports.KindMonth, monthly, monthlyChannels); err != nil {
			return err
		}
		return bump()
	})
	if err != nil {
		return ImportStats{}, err
	}
	return st, nil
}

// fromFile gives the rows of the file's reports and of their channels.
func fromFile(rs []reportfile.Report) ([]reports.Row, []reports.ChannelRow) {
	out := make([]reports.Row, len(rs))
	var channels []reports.ChannelRow
	for i, r := range rs {
		out[i] = reports.Row{GuildID: r.GuildID, Period: r.Period, GeneratedAt: storedTime(r.GeneratedAt), Status: r.Status,
			TotalMessages: r.TotalMessages}
		if r.Error != nil {
			out[i].ErrorCode, out[i].ErrorMessage = &r.Error.Code, &r.Error.Message
		}
		for _, c := range r.Channels {
			channels = append(channels, reports.ChannelRow{GuildID: r.GuildID, Period: r.Period, ChannelID: c.ID, Name: c.Name, Messages: c.Messages})
		}
	}
	return out, channels
}

// Export reads everything stats-svc answers from, in one consistent view, ordered
// deterministically: the catalog by number, guilds by id, reports by guild then period, and
// channels by messages (descending) then id. It holds the whole content in memory, which is
// fine for the reports of a few hundred servers.
func (s *Store) Export(ctx context.Context) (*reportfile.File, error) {
	f := &reportfile.File{}
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		var minutes int
		if err := tx.Raw("SELECT refresh_minutes FROM collector_state WHERE id = 1").Scan(&minutes).Error; err != nil {
			return fmt.Errorf("read collector state: %w", err)
		}
		f.RefreshMinutes = &minutes
		var cat []reports.CatalogServer
		if err := tx.Order("number").Find(&cat).Error; err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		f.Catalog = make([]catalog.Entry, len(cat))
		for i, c := range cat {
			f.Catalog[i] = catalog.Entry{Number: c.Number, Name: c.Name, GuildID: c.GuildID}
		}
		var guilds []reports.Guild
		if err := tx.Find(&guilds).Error; err != nil {
			return fmt.Errorf("read guilds: %w", err)
		}
		slices.SortFunc(guilds, func(a, b reports.Guild) int { return cmp.Compare(a.GuildID, b.GuildID) })
		for _, g := range guilds {
			fg := reportfile.Guild{GuildID: g.GuildID, Icon: g.Icon, Banner: g.Banner, BannerKnown: g.BannerKnown}
			if g.MetadataAt != nil {
				at := g.MetadataAt.UTC()
				fg.MetadataAt = &at
			}
			if !g.BannerKnown {
				fg.Banner = nil
			}
			f.Guilds = append(f.Guilds, fg)
		}
		var err error
		if f.Daily, err = exportReports(tx, reports.KindDay); err != nil {
			return err
		}
		f.Monthly, err = exportReports(tx, reports.KindMonth)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// exportReports reads the reports of kind and their channels, and orders them in Go (byte
// order, whatever the database collation).
func exportReports(tx *gorm.DB, kind reports.Kind) ([]reportfile.Report, error) {
	t := kind.Tables()
	var reps []reports.Row
	if err := tx.Raw("SELECT " + kind.ReportColumns() + " FROM " + t.Reports).Scan(&reps).Error; err != nil {
		return nil, fmt.Errorf("read %s: %w", t.Reports, err)
	}
	var chans []reports.ChannelRow
	if err := tx.Raw("SELECT " + kind.ChannelColumns() + " FROM " + t.Channels).Scan(&chans).Error; err != nil {
		return nil, fmt.Errorf("read %s: %w", t.Channels, err)
	}
	out := make([]reportfile.Report, len(reps))
	index := make(map[[2]string]int, len(reps))
	for i, r := range reps {
		rep := reportfile.Report{GuildID: r.GuildID, Period: r.Period, GeneratedAt: r.GeneratedAt.UTC(), Status: r.Status,
			TotalMessages: r.TotalMessages, Channels: []reportfile.Channel{}}
		if r.ErrorCode != nil {
			rep.Error = &reportfile.ReportError{Code: *r.ErrorCode}
			if r.ErrorMessage != nil {
				rep.Error.Message = *r.ErrorMessage
			}
		}
		out[i] = rep
		index[[2]string{r.GuildID, r.Period}] = i
	}
	for _, c := range chans {
		// The foreign key leaves no channel row without its report.
		if i, ok := index[[2]string{c.GuildID, c.Period}]; ok {
			out[i].Channels = append(out[i].Channels, reportfile.Channel{ID: c.ChannelID, Name: c.Name, Messages: c.Messages})
		}
	}
	slices.SortFunc(out, func(a, b reportfile.Report) int {
		return cmp.Or(cmp.Compare(a.GuildID, b.GuildID), cmp.Compare(a.Period, b.Period))
	})
	for _, r := range out {
		slices.SortFunc(r.Channels, func(a, b reportfile.Channel) int {
			return cmp.Or(cmp.Compare(b.Messages, a.Messages), cmp.Compare(a.ID, b.ID))
		})
	}
	return out, nil
}
