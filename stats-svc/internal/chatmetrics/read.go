package chatmetrics

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/reports"
)

// Periods are the report periods exported: Moscow today, yesterday and the current month.
type Periods struct {
	Today, Yesterday reports.Day
	Month            reports.Month
}

// PeriodsAt returns the periods exported at now.
func PeriodsAt(now time.Time) Periods {
	today := reports.DayOf(now)
	return Periods{Today: today, Yesterday: today.AddDays(-1), Month: reports.MonthOf(now)}
}

// Server is one catalog server.
type Server struct {
	Number  int
	Name    string
	GuildID string
}

// Report is one stored report of a catalog server for one of the exported periods.
type Report struct {
	GuildID     string
	Period      string // today, yesterday or month
	GeneratedAt time.Time
	Status      string
	Total       int64
}

// Channel is one channel's count in such a report.
type Channel struct {
	GuildID, ChannelID, Name string
	Period                   string
	Messages                 int64
}

// Snapshot is what one read of the database gives the collector.
type Snapshot struct {
	Generation     int64
	RefreshMinutes int
	Periods        Periods
	Servers        []Server
	Reports        []Report
	Channels       []Channel
}

// DB reads snapshots from a migrated reports database.
type DB struct {
	gdb     *gorm.DB
	dialect db.Dialect
	reads   *db.Reads // nil: all on gdb
}

// RouteReads sends the reads to r's replica while it answers (the primary otherwise), as the
// API's reads go.
func (d *DB) RouteReads(r *db.Reads) { d.reads = r }

// NewDB returns the source over gdb.
func NewDB(gdb *gorm.DB) *DB { return &DB{gdb: gdb, dialect: db.DialectOf(gdb)} }

// Generation implements Source: one single-row query.
func (d *DB) Generation(ctx context.Context) (int64, error) {
	return db.ReadValue(ctx, d.reads, d.gdb, db.NoKey, func(gdb *gorm.DB) (int64, error) {
		return reports.Generation(ctx, gdb)
	})
}

// Read implements Source: the catalog, the state row and the reports and channels of p, on one
// consistent view (a read-only snapshot transaction on PostgreSQL; the generation is read first
// on SQLite, so the data is never older than the generation it is cached under).
func (d *DB) Read(ctx context.Context, p Periods) (Snapshot, error) {
	var s Snapshot
	fn := func(tx *gorm.DB) error {
		s = Snapshot{Periods: p} // from scratch when the primary reads again after the replica failed
		st, err := reports.ReadState(tx)
		if err != nil {
			return err
		}
		s.Generation, s.RefreshMinutes = st.Generation, st.RefreshMinutes
		if err := tx.Raw("SELECT number, name, guild_id FROM catalog_servers ORDER BY number").Scan(&s.Servers).Error; err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		today, yesterday, month := p.Today.String(), p.Yesterday.String(), p.Month.String()
		label := func(period string) string {
			switch period {
			case today:
				return PeriodToday
			case yesterday:
				return PeriodYesterday
			}
			return PeriodMonth
		}
		for _, k := range []struct {
			kind  reports.Kind
			where string
			args  []any
		}{
			{reports.KindDay, " IN (?, ?)", []any{today, yesterday}},
			{reports.KindMonth, " = ?", []any{month}},
		} {
			t := k.kind.Tables()
			var reps []reports.Row
			if err := tx.Raw("SELECT "+k.kind.ReportColumns()+" FROM "+t.Reports+" WHERE "+t.Period+k.where, k.args...).Scan(&reps).Error; err != nil {
				return fmt.Errorf("read %s reports: %w", k.kind, err)
			}
			for _, r := range reps {
				s.Reports = append(s.Reports, Report{GuildID: r.GuildID, Period: label(r.Period), GeneratedAt: r.GeneratedAt, Status: r.Status, Total: r.TotalMessages})
			}
			// Scanned by hand: up to 100,000 rows a kind, for which GORM's reflective Scan costs
			// several times the query.
			rows, err := tx.Raw("SELECT "+k.kind.ChannelColumns()+" FROM "+t.Channels+" WHERE "+t.Period+k.where, k.args...).Rows()
			if err != nil {
				return fmt.Errorf("read %s channels: %w", k.kind, err)
			}
			for rows.Next() {
				var c reports.ChannelRow
				if err := rows.Scan(&c.GuildID, &c.Period, &c.ChannelID, &c.Name, &c.Messages); err != nil {
					rows.Close()
					return fmt.Errorf("read %s channels: %w", k.kind, err)
				}
				s.Channels = append(s.Channels, Channel{GuildID: c.GuildID, ChannelID: c.ChannelID, Name: c.Name, Period: label(c.Period), Messages: c.Messages})
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read %s channels: %w", k.kind, err)
			}
		}
		return nil
	}
	err := db.ReadOn(ctx, d.reads, d.gdb, db.NoKey, func(gdb *gorm.DB) error {
		tx := gdb.WithContext(ctx)
		if d.dialect.SnapshotReads {
			return tx.Transaction(fn, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
		}
		return fn(tx)
	})
	return s, err
}
