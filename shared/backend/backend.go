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

// Backend is a service's database and Redis. Close releases what Open opened.
type Backend struct {
	DB    *gorm.DB
	Redis *redis.Client // nil: no REDIS_URL

	ownDB, ownRedis bool // opened by Open, so closed by Close
}

// Given are a database and a Redis client the caller opened itself (a test, a benchmark: each
// service's app passes its WithDB and WithRedis options here). Open uses each one given as it is,
// without migrating it, instead of opening cfg's; Close leaves it open, as it is the caller's.
type Given struct {
	DB    *gorm.DB
	Redis *redis.Client
}

// Open opens cfg's database, applying the pending migrations of sets first unless
// cfg.MigrateOnStart is false, and its Redis (rdb.Open: none without REDIS_URL, and an
// unreachable one is no error), except what given holds.
func Open(ctx context.Context, cfg config.Common, log *slog.Logger, given Given, sets ...migrate.Set) (*Backend, error) {
	b := &Backend{DB: given.DB, Redis: given.Redis}
	if b.DB == nil {
		gdb, err := migrate.Open(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart, sets...)
		if err != nil {
			return nil, err
		}
		b.DB, b.ownDB = gdb, true
	}
	if b.Redis == nil {
		rc, err := rdb.Open(ctx, cfg.RedisURL)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Redis, b.ownRedis = rc, rc != nil
	}
	return b, nil
}

// Close closes the Redis client and the database that Open opened.
func (b *Backend) Close() {
	if b.ownRedis {
		b.Redis.Close()
	}
	if b.ownDB {
		db.Close(b.DB)
	}
}
