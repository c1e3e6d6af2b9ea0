package store

import (
	"cmp"
	"context"
	"fmt"
	"io"
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

// Scan hands a file's entries to a visitor: reportfile.Scan over the file, read from its start.
type Scan func(v reportfile.Visitor) (reportfile.Counts, error)

// importBatch bounds the channel rows an import holds before writing them: a few batches of
// INSERT, whatever the size of the file.
const importBatch = 4 * batchSize

// ImportStream writes a file in one transaction as scan reads it: refreshMinutes when present,
// the catalog when present (replacing it), guild metadata and reports upserted in batches (each
// report whole: its channels replace the stored ones). Importing the same file again changes
// nothing. scan's file should have been validated by a scan of its own before: an error of scan
// (or of the database) rolls everything back, so nothing is written, but only after the work up
// to it. Memory holds one batch, not the file.
func (s *Store) ImportStream(ctx context.Context, scan Scan) (ImportStats, error) {
	var st ImportStats
	err := s.write(ctx, func(tx *gorm.DB, bump func() error) error {
		w := importWriter{tx: tx}
		n, err := scan(reportfile.Visitor{
			RefreshMinutes: func(m int) error {
				_, err := setRefreshMinutes(tx, m)
				return err
			},
			Catalog: func(entries []catalog.Entry) error { return replaceCatalog(tx, entries) },
			Guild:   w.guild,
			Daily:   func(r reportfile.Report) error { return w.report(reports.KindDay, r) },
			Monthly: func(r reportfile.Report) error { return w.report(reports.KindMonth, r) },
		})
		if err != nil {
			return err
		}
		if err := w.flush(); err != nil {
			return err
		}
		st = ImportStats{Catalog: n.CatalogEntries, CatalogReplaced: n.Catalog, Guilds: n.Guilds, Daily: n.Daily, Monthly: n.Monthly}
		return bump()
	})
	if err != nil {
		return ImportStats{}, err
	}
	return st, nil
}

// Import writes a decoded file in one transaction, as ImportStream does.
func (s *Store) Import(ctx context.Context, f *reportfile.File) (ImportStats, error) {
	return s.ImportStream(ctx, func(v reportfile.Visitor) (reportfile.Counts, error) {
		n := reportfile.Counts{Catalog: f.Catalog != nil, CatalogEntries: len(f.Catalog), Guilds: len(f.Guilds), Daily: len(f.Daily), Monthly: len(f.Monthly)}
		if f.RefreshMinutes != nil {
			if err := v.RefreshMinutes(*f.RefreshMinutes); err != nil {
				return n, err
			}
		}
		if f.Catalog != nil {
			if err := v.Catalog(f.Catalog); err != nil {
				return n, err
			}
		}
		for _, g := range f.Guilds {
			if err := v.Guild(g); err != nil {
				return n, err
			}
		}
		for _, r := range f.Daily {
			if err := v.Daily(r); err != nil {
				return n, err
			}
		}
		for _, r := range f.Monthly {
			if err := v.Monthly(r); err != nil {
				return n, err
			}
		}
		return n, nil
	})
}

// importWriter collects the guilds and reports of an import into batches and writes each full
// batch (and the rest at the end): a batch holds one kind of report.
type importWriter struct {
	tx       *gorm.DB
	guilds   []reports.Guild
	kind     reports.Kind
	rows     []reports.Row
	channels []reports.ChannelRow
}

func (w *importWriter) guild(g reportfile.Guild) error {
	row := reports.Guild{GuildID: g.GuildID, Icon: g.Icon, Banner: g.Banner, BannerKnown: g.BannerKnown}
	if g.MetadataAt != nil {
		at := storedTime(*g.MetadataAt)
		row.MetadataAt = &at
	}
	w.guilds = append(w.guilds, row)
	if len(w.guilds) >= batchSize {
		return w.flushGuilds()
	}
	return nil
}

func (w *importWriter) report(kind reports.Kind, r reportfile.Report) error {
	if len(w.rows) > 0 && kind != w.kind {
		if err := w.flushReports(); err != nil {
			return err
		}
	}
	w.kind = kind
	row := reports.Row{GuildID: r.GuildID, Period: r.Period, GeneratedAt: storedTime(r.GeneratedAt), Status: r.Status,
		TotalMessages: r.TotalMessages}
	if r.Error != nil {
		row.ErrorCode, row.ErrorMessage = &r.Error.Code, &r.Error.Message
	}
	w.rows = append(w.rows, row)
	for _, c := range r.Channels {
		w.channels = append(w.channels, reports.ChannelRow{GuildID: r.GuildID, Period: r.Period, ChannelID: c.ID, Name: c.Name, Messages: c.Messages})
	}
	if len(w.rows) >= batchSize || len(w.channels) >= importBatch {
		return w.flushReports()
	}
	return nil
}

func (w *importWriter) flushGuilds() error {
	err := upsertGuilds(w.tx, w.guilds)
	w.guilds = w.guilds[:0]
	return err
}

func (w *importWriter) flushReports() error {
	err := writeReports(w.tx, w.kind, w.rows, w.channels)
	w.rows, w.channels = w.rows[:0], w.channels[:0]
	return err
}

func (w *importWriter) flush() error {
	if err := w.flushGuilds(); err != nil {
		return err
	}
	return w.flushReports()
}

// ExportStats counts what an export wrote.
type ExportStats struct {
	Servers, Guilds, Daily, Monthly int
}

// ExportTo writes the file of everything stats-svc answers from to w, from one consistent view,
// ordered deterministically: the catalog by number, guilds by id, reports by guild then period,
// and channels by messages (descending) then id, ids in byte order whatever the database's
// collation. It writes as it reads: the catalog and the guilds (a few hundred rows) are read
// whole, the reports a guild at a time in batches of batchSize with their channels, so memory
// holds one batch, not the file.
func (s *Store) ExportTo(ctx context.Context, w io.Writer) (ExportStats, error) {
	var st ExportStats
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		var minutes int
		if err := tx.Raw("SELECT refresh_minutes FROM collector_state WHERE id = 1").Scan(&minutes).Error; err != nil {
			return fmt.Errorf("read collector state: %w", err)
		}
		var cat []reports.CatalogServer
		if err := tx.Order("number").Find(&cat).Error; err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		entries := make([]catalog.Entry, len(cat))
		for i, c := range cat {
			entries[i] = catalog.Entry{Number: c.Number, Name: c.Name, GuildID: c.GuildID}
		}
		enc, err := reportfile.NewEncoder(w, &minutes, entries)
		if err != nil {
			return err
		}
		st.Servers = len(entries)
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
			if err := enc.Guild(fg); err != nil {
				return err
			}
		}
		st.Guilds = len(guilds)
		if st.Daily, err = exportReports(tx, reports.KindDay, enc.Daily); err != nil {
			return err
		}
		if st.Monthly, err = exportReports(tx, reports.KindMonth, enc.Monthly); err != nil {
			return err
		}
		return enc.Close()
	})
	if err != nil {
		return ExportStats{}, err
	}
	return st, nil
}

// exportReports hands the reports of kind to write, in order, and returns how many there were.
// The guilds are listed first and ordered in Go (byte order); a guild's reports are read in
// batches by period (fixed-width text, so the database's order is byte order), each batch with
// its channels through the primary keys' ranges, the channels ordered in Go.
func exportReports(tx *gorm.DB, kind reports.Kind, write func(reportfile.Report) error) (int, error) {
	t := kind.Tables()
	var guilds []string
	if err := tx.Raw("SELECT DISTINCT guild_id FROM " + t.Reports).Scan(&guilds).Error; err != nil {
		return 0, fmt.Errorf("read %s: %w", t.Reports, err)
	}
	slices.Sort(guilds)
	n := 0
	for _, g := range guilds {
		after := ""
		for {
			var reps []reports.Row
			q := "SELECT " + kind.ReportColumns() + " FROM " + t.Reports + " WHERE guild_id = ? AND " + t.Period + " > ? ORDER BY " + t.Period + " LIMIT ?"
			if err := tx.Raw(q, g, after, batchSize).Scan(&reps).Error; err != nil {
				return n, fmt.Errorf("read %s: %w", t.Reports, err)
			}
			if len(reps) == 0 {
				break
			}
			var chans []reports.ChannelRow
			q = "SELECT " + kind.ChannelColumns() + " FROM " + t.Channels + " WHERE guild_id = ? AND " + t.Period + " BETWEEN ? AND ?"
			if err := tx.Raw(q, g, reps[0].Period, reps[len(reps)-1].Period).Scan(&chans).Error; err != nil {
				return n, fmt.Errorf("read %s: %w", t.Channels, err)
			}
			byPeriod := make(map[string][]reportfile.Channel, len(reps))
			for _, c := range chans {
				byPeriod[c.Period] = append(byPeriod[c.Period], reportfile.Channel{ID: c.ChannelID, Name: c.Name, Messages: c.Messages})
			}
			for _, r := range reps {
				rep := reportfile.Report{GuildID: r.GuildID, Period: r.Period, GeneratedAt: r.GeneratedAt.UTC(), Status: r.Status,
					TotalMessages: r.TotalMessages, Channels: byPeriod[r.Period]}
				if r.ErrorCode != nil {
					rep.Error = &reportfile.ReportError{Code: *r.ErrorCode}
					if r.ErrorMessage != nil {
						rep.Error.Message = *r.ErrorMessage
					}
				}
				slices.SortFunc(rep.Channels, func(a, b reportfile.Channel) int {
					return cmp.Or(cmp.Compare(b.Messages, a.Messages), cmp.Compare(a.ID, b.ID))
				})
				if err := write(rep); err != nil {
					return n, err
				}
				n++
			}
			after = reps[len(reps)-1].Period
		}
	}
	return n, nil
}
