// Package reports is the data contract between collector-svc, which writes message-count
// reports, and stats-svc, which reads them: the tables, their migrations, and the data
// generation that readers key their caches by.
package reports

import (
	"context"
	"embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/shared/migrate"
)

//go:embed migrations
var migrationFS embed.FS

// Migrations is the reports schema for migrate.Up.
var Migrations = migrate.Set{Component: "reports", FS: mustSub(migrationFS, "migrations")}

// Report statuses. ok and stale are stored; missing is never stored: readers compose it for the
// absence of a report.
const (
	StatusOK      = "ok"
	StatusStale   = "stale"
	StatusMissing = "missing"
)

// ValidStoredStatus reports whether s may be stored (and imported) as a report's status.
func ValidStoredStatus(s string) bool { return s == StatusOK || s == StatusStale }

// CatalogServer is one configured server.
type CatalogServer struct {
	Number  int `gorm:"primaryKey;autoIncrement:false"`
	Name    string
	GuildID string
}

func (CatalogServer) TableName() string { return "catalog_servers" }

// Guild is a server's current metadata. A nil Icon or Banner means no image.
type Guild struct {
	GuildID     string `gorm:"primaryKey"`
	Icon        *string
	Banner      *string
	BannerKnown bool
	MetadataAt  *time.Time
}

func (Guild) TableName() string { return "guilds" }

// DailyReport is the count of one server's messages on one Moscow day.
type DailyReport struct {
	GuildID       string `gorm:"primaryKey"`
	Day           string `gorm:"primaryKey"` // YYYY-MM-DD
	GeneratedAt   time.Time
	Status        string
	ErrorCode     *string
	ErrorMessage  *string
	TotalMessages int64
}

func (DailyReport) TableName() string { return "daily_reports" }

// DailyChannelCount is one channel's share of a DailyReport.
type DailyChannelCount struct {
	GuildID   string `gorm:"primaryKey"`
	Day       string `gorm:"primaryKey"`
	ChannelID string `gorm:"primaryKey"`
	Name      string
	Messages  int64
}

func (DailyChannelCount) TableName() string { return "daily_channel_counts" }

// MonthlyReport is the count of one server's messages in one Moscow month, counted over the
// month (never summed from days).
type MonthlyReport struct {
	GuildID       string `gorm:"primaryKey"`
	Month         string `gorm:"primaryKey"` // YYYY-MM
	GeneratedAt   time.Time
	Status        string
	ErrorCode     *string
	ErrorMessage  *string
	TotalMessages int64
}

func (MonthlyReport) TableName() string { return "monthly_reports" }

// MonthlyChannelCount is one channel's share of a MonthlyReport.
type MonthlyChannelCount struct {
	GuildID   string `gorm:"primaryKey"`
	Month     string `gorm:"primaryKey"`
	ChannelID string `gorm:"primaryKey"`
	Name      string
	Messages  int64
}

func (MonthlyChannelCount) TableName() string { return "monthly_channel_counts" }

// CollectorState is the single row describing the collector's passes.
type CollectorState struct {
	ID             int `gorm:"primaryKey;autoIncrement:false"`
	RefreshMinutes int
	Generation     int64
	PassStartedAt  *time.Time
	PassFinishedAt *time.Time
	LastGoodPassAt *time.Time
	LastError      *string
}

func (CollectorState) TableName() string { return "collector_state" }

// BumpGeneration increments the data generation inside the writer's transaction, so that the new
// generation becomes visible exactly when the data it stands for does.
func BumpGeneration(tx *gorm.DB) (int64, error) {
	if err := tx.Exec("UPDATE collector_state SET generation = generation + 1 WHERE id = 1").Error; err != nil {
		return 0, fmt.Errorf("bump data generation: %w", err)
	}
	var gen int64
	if err := tx.Raw("SELECT generation FROM collector_state WHERE id = 1").Scan(&gen).Error; err != nil {
		return 0, fmt.Errorf("read data generation: %w", err)
	}
	return gen, nil
}

// Generation returns the current data generation.
func Generation(ctx context.Context, db *gorm.DB) (int64, error) {
	var gen int64
	err := db.WithContext(ctx).Raw("SELECT generation FROM collector_state WHERE id = 1").Scan(&gen).Error
	return gen, err
}

// ReaderState is what a reader of the reports needs of the collector state: how often the
// collector refreshes, and the data generation.
type ReaderState struct {
	RefreshMinutes int
	Generation     int64
}

// ReadState reads the ReaderState on tx; a database without the row is not migrated.
func ReadState(tx *gorm.DB) (ReaderState, error) {
	var st ReaderState
	res := tx.Raw("SELECT refresh_minutes, generation FROM collector_state WHERE id = 1").Scan(&st)
	if res.Error != nil {
		return st, fmt.Errorf("read collector state: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return st, fmt.Errorf("read collector state: no row (database not migrated?)")
	}
	return st, nil
}

// GenerationChannel is the Redis channel on which writers announce a new generation, so that
// readers drop their caches at once instead of at their next poll of the database.
const GenerationChannel = "reports:generation"

// PublishGeneration announces gen on GenerationChannel. A nil client does nothing. Callers only
// log an error: readers also poll the database.
func PublishGeneration(ctx context.Context, rdb *redis.Client, gen int64) error {
	if rdb == nil {
		return nil
	}
	return rdb.Publish(ctx, GenerationChannel, strconv.FormatInt(gen, 10)).Err()
}
