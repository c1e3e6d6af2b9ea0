// Package store writes the reports database (shared/reports): the catalog, guild metadata,
// whole reports, stale marks and the collector's state, and imports and exports the reports
// file (README, Import and export file). Every write that changes what stats-svc serves bumps the data generation in the same
// transaction and announces it on Redis after the commit.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/shared/db"
	"forumstats.local/shared/reports"
)

// batchSize bounds the rows of one INSERT: a few thousand bind parameters, well under the
// limits of both PostgreSQL (65535) and SQLite (32766).
const batchSize = 500

// Store is the collector's access to the reports database.
type Store struct {
	db      *gorm.DB
	rdb     *redis.Client // nil: no Redis, readers poll the generation
	log     *slog.Logger
	dialect db.Dialect
}

// New returns a Store over a migrated reports database. rdb may be nil.
func New(gdb *gorm.DB, rdb *redis.Client, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{db: gdb, rdb: rdb, log: log, dialect: db.DialectOf(gdb)}
}

// write runs fn in a transaction; bump (for fn) increments the data generation, which is
// published once the transaction has committed.
func (s *Store) write(ctx context.Context, fn func(tx *gorm.DB, bump func() error) error) error {
	var gen int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(tx, func() error {
			g, err := reports.BumpGeneration(tx)
			gen = g
			return err
		})
	})
	if err != nil {
		return err
	}
	if gen != 0 {
		s.publish(ctx, gen)
	}
	return nil
}

func (s *Store) publish(ctx context.Context, gen int64) {
	if err := reports.PublishGeneration(ctx, s.rdb, gen); err != nil {
		// Readers also poll the generation in the database: a lost announcement only delays them.
		s.log.Warn("cannot announce the data generation on Redis", "generation", gen, "err", err)
	}
}

// storedTime is how an instant is written: UTC, at the microsecond precision of PostgreSQL,
// so that what an export reads back equals what was written, in both dialects.
func storedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Catalog returns the configured servers ordered by number.
func (s *Store) Catalog(ctx context.Context) ([]catalog.Entry, error) {
	var rows []reports.CatalogServer
	if err := s.db.WithContext(ctx).Order("number").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	out := make([]catalog.Entry, len(rows))
	for i, r := range rows {
		out[i] = catalog.Entry{Number: r.Number, Name: r.Name, GuildID: r.GuildID}
	}
	return out, nil
}

// SyncCatalog replaces the catalog with entries (already validated) in one transaction. It
// writes nothing when the catalog is already equal, so that a pass does not disturb readers'
// caches for nothing.
func (s *Store) SyncCatalog(ctx context.Context, entries []catalog.Entry) error {
	return s.write(ctx, func(tx *gorm.DB, bump func() error) error {
		var current []reports.CatalogServer
		if err := tx.Order("number").Find(&current).Error; err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		if sameCatalog(current, entries) {
			return nil
		}
		if err := replaceCatalog(tx, entries); err != nil {
			return err
		}
		return bump()
	})
}

func sameCatalog(current []reports.CatalogServer, entries []catalog.Entry) bool {
	if len(current) != len(entries) {
		return false
	}
	byNumber := make(map[int]catalog.Entry, len(entries))
	for _, e := range entries {
		byNumber[e.Number] = e
	}
	for _, c := range current {
		if e, ok := byNumber[c.Number]; !ok || e.Name != c.Name || e.GuildID != c.GuildID {
			return false
		}
	}
	return true
}

func replaceCatalog(tx *gorm.DB, entries []catalog.Entry) error {
	if err := tx.Exec("DELETE FROM catalog_servers").Error; err != nil {
		return fmt.Errorf("clear catalog: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	rows := make([]reports.CatalogServer, len(entries))
	for i, e := range entries {
		rows[i] = reports.CatalogServer{Number: e.Number, Name: e.Name, GuildID: e.GuildID}
	}
	if err := tx.CreateInBatches(rows, batchSize).Error; err != nil {
		return fmt.Errorf("write catalog: %w", err)
	}
	return nil
}

// SaveGuild records a guild's current icon and banner (nil: none), fetched at at.
func (s *Store) SaveGuild(ctx context.Context, guildID string, icon, banner *string, at time.Time) error {
	return s.write(ctx, func(tx *gorm.DB, bump func() error) error {
		var old reports.Guild
		res := tx.Where("guild_id = ?", guildID).Limit(1).Find(&old)
		if res.Error != nil {
			return fmt.Errorf("read guild %s: %w", guildID, res.Error)
		}
		at := storedTime(at)
		g := reports.Guild{GuildID: guildID, Icon: icon, Banner: banner, BannerKnown: true, MetadataAt: &at}
		if err := upsertGuilds(tx, []reports.Guild{g}); err != nil {
			return err
		}
		// metadata_at alone is not served: only a visible change needs a new generation.
		if res.RowsAffected == 1 && old.BannerKnown && equal(old.Icon, icon) && equal(old.Banner, banner) {
			return nil
		}
		return bump()
	})
}

func equal(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func upsertGuilds(tx *gorm.DB, rows []reports.Guild) error {
	if len(rows) == 0 {
		return nil
	}
	err := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "guild_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"icon", "banner", "banner_known", "metadata_at"}),
	}).CreateInBatches(rows, batchSize).Error
	if err != nil {
		return fmt.Errorf("write guild metadata: %w", err)
	}
	return nil
}

// SaveReport writes a whole report of kind: the report row replaces any earlier one and the
// channel rows (all of r's guild and period) replace its earlier channels, in one transaction
// with the generation bump. A pass writes status ok; a refresh that fails goes to MarkStale.
func (s *Store) SaveReport(ctx context.Context, kind reports.Kind, r reports.Row, channels []reports.ChannelRow) error {
	return s.write(ctx, func(tx *gorm.DB, bump func() error) error {
		r.GeneratedAt = storedTime(r.GeneratedAt)
		if err := writeReports(tx, kind, []reports.Row{r}, channels); err != nil {
			return err
		}
		return bump()
	})
}

// writeReports upserts the report rows, deletes their earlier channel rows (one statement per
// guild) and inserts the new ones, all in batches. Every channel row belongs to one of rs.
func writeReports(tx *gorm.DB, kind reports.Kind, rs []reports.Row, channels []reports.ChannelRow) error {
	if len(rs) == 0 {
		return nil
	}
	t := kind.Tables()
	err := tx.Table(t.Reports).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "guild_id"}, {Name: t.Period}},
		DoUpdates: clause.AssignmentColumns([]string{"generated_at", "status", "error_code", "error_message", "total_messages"}),
	}).CreateInBatches(reportValues(t.Period, rs), batchSize).Error
	if err != nil {
		return fmt.Errorf("write %s: %w", t.Reports, err)
	}
	periods := map[string][]string{}
	var guilds []string
	for _, r := range rs {
		if _, ok := periods[r.GuildID]; !ok {
			guilds = append(guilds, r.GuildID)
		}
		periods[r.GuildID] = append(periods[r.GuildID], r.Period)
	}
	for _, g := range guilds {
		for ps := range slices.Chunk(periods[g], batchSize) {
			q := "DELETE FROM " + t.Channels + " WHERE guild_id = ? AND " + t.Period + " IN ?"
			if err := tx.Exec(q, g, ps).Error; err != nil {
				return fmt.Errorf("clear %s: %w", t.Channels, err)
			}
		}
	}
	if len(channels) > 0 {
		if err := tx.Table(t.Channels).CreateInBatches(channelValues(t.Period, channels), batchSize).Error; err != nil {
			return fmt.Errorf("write %s: %w", t.Channels, err)
		}
	}
	return nil
}

// reportValues and channelValues are the rows by column name: the period column is day or
// month (Tables().Period), so one code path writes both kinds.
func reportValues(period string, rs []reports.Row) []map[string]any {
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = map[string]any{"guild_id": r.GuildID, period: r.Period, "generated_at": r.GeneratedAt, "status": r.Status,
			"error_code": r.ErrorCode, "error_message": r.ErrorMessage, "total_messages": r.TotalMessages}
	}
	return out
}

func channelValues(period string, cs []reports.ChannelRow) []map[string]any {
	out := make([]map[string]any, len(cs))
	for i, c := range cs {
		out[i] = map[string]any{"guild_id": c.GuildID, period: c.Period, "channel_id": c.ChannelID, "name": c.Name, "messages": c.Messages}
	}
	return out
}

// MarkStale records that the refresh of an existing report failed: its counts and generatedAt
// stay, its status becomes stale with the error. A report that does not exist stays missing;
// the result says whether one was marked.
func (s *Store) MarkStale(ctx context.Context, kind reports.Kind, guildID, period, code, message string) (bool, error) {
	t := kind.Tables()
	marked := false
	err := s.write(ctx, func(tx *gorm.DB, bump func() error) error {
		res := tx.Exec("UPDATE "+t.Reports+" SET status = ?, error_code = ?, error_message = ? WHERE guild_id = ? AND "+t.Period+" = ?",
			reports.StatusStale, code, message, guildID, period)
		if res.Error != nil {
			return fmt.Errorf("mark %s stale: %w", t.Reports, res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		marked = true
		return bump()
	})
	return marked, err
}

// Report returns the stored report of kind for the guild and period with its channels; found is
// false when there is none.
func (s *Store) Report(ctx context.Context, kind reports.Kind, guildID, period string) (reports.Row, []reports.ChannelRow, bool, error) {
	t := kind.Tables()
	var (
		row      reports.Row
		channels []reports.ChannelRow
		found    bool
	)
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		var rows []reports.Row
		if err := tx.Table(t.Reports).Select("guild_id, "+t.Period+" AS period, generated_at, status, error_code, error_message, total_messages").
			Where("guild_id = ? AND "+t.Period+" = ?", guildID, period).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		row, found = rows[0], true
		return tx.Table(t.Channels).Select("guild_id, "+t.Period+" AS period, channel_id, name, messages").
			Where("guild_id = ? AND "+t.Period+" = ?", guildID, period).Order("channel_id").Scan(&channels).Error
	})
	if err != nil {
		return reports.Row{}, nil, false, fmt.Errorf("read %s %s of %s: %w", t.Reports, period, guildID, err)
	}
	return row, channels, found, nil
}

// MissingDays returns those of days (labels of one guild) that have no daily report.
func (s *Store) MissingDays(ctx context.Context, guildID string, days []string) ([]string, error) {
	if len(days) == 0 {
		return nil, nil
	}
	t := reports.KindDay.Tables()
	var have []string
	err := s.db.WithContext(ctx).Raw("SELECT "+t.Period+" FROM "+t.Reports+" WHERE guild_id = ? AND "+t.Period+" IN ?", guildID, days).Scan(&have).Error
	if err != nil {
		return nil, fmt.Errorf("read daily reports of %s: %w", guildID, err)
	}
	present := make(map[string]bool, len(have))
	for _, d := range have {
		present[d] = true
	}
	var missing []string
	for _, d := range days {
		if !present[d] {
			missing = append(missing, d)
		}
	}
	return missing, nil
}

// RecordPassStart records the start of a pass and the pause between passes that stats-svc
// answers with. A changed pause changes every answer, so it bumps the generation.
func (s *Store) RecordPassStart(ctx context.Context, start time.Time, refreshMinutes int) error {
	return s.write(ctx, func(tx *gorm.DB, bump func() error) error {
		changed, err := setRefreshMinutes(tx, refreshMinutes)
		if err != nil {
			return err
		}
		if err := tx.Exec("UPDATE collector_state SET pass_started_at = ? WHERE id = 1", storedTime(start)).Error; err != nil {
			return fmt.Errorf("record pass start: %w", err)
		}
		if changed {
			return bump()
		}
		return nil
	})
}

func setRefreshMinutes(tx *gorm.DB, minutes int) (changed bool, err error) {
	res := tx.Exec("UPDATE collector_state SET refresh_minutes = ? WHERE id = 1 AND refresh_minutes <> ?", minutes, minutes)
	if res.Error != nil {
		return false, fmt.Errorf("record refresh minutes: %w", res.Error)
	}
	return res.RowsAffected > 0, nil
}

// RecordPassEnd records when a pass finished and how: passErr nil makes it the last good pass.
func (s *Store) RecordPassEnd(ctx context.Context, finish time.Time, passErr error) error {
	finish = storedTime(finish)
	q := s.db.WithContext(ctx)
	var err error
	if passErr == nil {
		err = q.Exec("UPDATE collector_state SET pass_finished_at = ?, last_good_pass_at = ?, last_error = NULL WHERE id = 1", finish, finish).Error
	} else {
		err = q.Exec("UPDATE collector_state SET pass_finished_at = ?, last_error = ? WHERE id = 1", finish, passErr.Error()).Error
	}
	if err != nil {
		return fmt.Errorf("record pass end: %w", err)
	}
	return nil
}

// State returns the collector's recorded state.
func (s *Store) State(ctx context.Context) (reports.CollectorState, error) {
	var st reports.CollectorState
	res := s.db.WithContext(ctx).Where("id = 1").Limit(1).Find(&st)
	if res.Error != nil {
		return st, fmt.Errorf("read collector state: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return st, errors.New("read collector state: no row (database not migrated?)")
	}
	return st, nil
}

// readTx runs fn on one consistent view: a read-only repeatable-read transaction where the
// database has snapshot reads (PostgreSQL); elsewhere (SQLite) a plain transaction, which with
// the shared DSN holds the write lock.
func (s *Store) readTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.dialect.SnapshotReads {
		return s.db.WithContext(ctx).Transaction(fn, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	return s.db.WithContext(ctx).Transaction(fn)
}
