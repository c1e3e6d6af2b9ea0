// Package backend opens what a service keeps its state in: its database, migrated on opening or
// not by the one rule every command follows (MIGRATE_ON_START), and its optional Redis.
package backend

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/rdb"
)

// Backend is a service's database and Redis. Close releases both.
type Backend struct {
	DB    *gorm.DB
	Redis *redis.Client // nil: no REDIS_URL
}

// Open opens cfg's database, applying the pending migrations of sets first unless
// cfg.MigrateOnStart is false, and its Redis (rdb.Open: none without REDIS_URL, and an
// unreachable one is no error).
func Open(ctx context.Context, cfg config.Common, log *slog.Logger, sets ...migrate.Set) (*Backend, error) {
	gdb, err := migrate.Open(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart, sets...)
	if err != nil {
		return nil, err
	}
	rc, err := rdb.Open(ctx, cfg.RedisURL)
	if err != nil {
		db.Close(gdb)
		return nil, err
	}
	return &Backend{DB: gdb, Redis: rc}, nil
}

// Close closes Redis and the database.
func (b *Backend) Close() {
	if b.Redis != nil {
		b.Redis.Close()
	}
	db.Close(b.DB)
}
