package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/collector-svc/internal/window"
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
		if err := writeReports(tx, window.Day, fromFile(f.Daily)); err != nil {
			return err
		}
		if err := writeReports(tx, window.Month, fromFile(f.Monthly)); err != nil {
			return err
		}
		return bump()
	})
	if err != nil {
		return ImportStats{}, err
	}
	return st, nil
}

func fromFile(rs []reportfile.Report) []stored {
	out := make([]stored, len(rs))
	for i, r := range rs {
		channels := make([]Channel, len(r.Channels))
		for j, c := range r.Channels {
			channels[j] = Channel(c)
		}
		out[i] = stored{GuildID: r.GuildID, Period: r.Period, GeneratedAt: storedTime(r.GeneratedAt), Status: r.Status,
			TotalMessages: r.TotalMessages, Channels: channels}
		if r.Error != nil {
			out[i].ErrorCode, out[i].ErrorMessage = &r.Error.Code, &r.Error.Message
		}
	}
	return out
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
		if f.Daily, err = exportReports(tx, window.Day); err != nil {
			return err
		}
		f.Monthly, err = exportReports(tx, window.Month)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

type reportRow struct {
	GuildID       string
	Period        string
	GeneratedAt   time.Time
	Status        string
	ErrorCode     *string
	ErrorMessage  *string
	TotalMessages int64
}

type channelRow struct {
	GuildID   string
	Period    string
	ChannelID string
	Name      string
	Messages  int64
}

// exportReports reads the reports of kind and their channels, and orders them in Go (byte
// order, whatever the database collation).
func exportReports(tx *gorm.DB, kind window.Kind) ([]reportfile.Report, error) {
	t := tablesOf(kind)
	var reps []reportRow
	err := tx.Raw(`SELECT guild_id, ` + t.period + ` AS period, generated_at, status, error_code, error_message, total_messages
FROM ` + t.reports).Scan(&reps).Error
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.reports, err)
	}
	var chans []channelRow
	err = tx.Raw(`SELECT guild_id, ` + t.period + ` AS period, channel_id, name, messages FROM ` + t.channels).Scan(&chans).Error
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.channels, err)
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
