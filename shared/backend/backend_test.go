package backend_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"forumstats.local/shared/backend"
	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/reports"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tt := range []struct {
		name     string
		migrate  bool
		redis    string
		tables   bool // the migrations' tables exist after Open
		hasRedis bool
	}{
		{"MIGRATE_ON_START=false leaves the schema alone", false, "", false, false},
		{"migrated on opening", true, "", true, false},
		{"with a Redis, reachable or not", true, "redis://127.0.0.1:1/0", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Common{DatabaseURL: "sqlite:" + filepath.Join(dir, tt.name+".db"), RedisURL: tt.redis, MigrateOnStart: tt.migrate}
			b, err := backend.Open(ctx, cfg, nil, backend.Given{}, reports.Migrations)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got := b.DB.Migrator().HasTable("daily_reports"); got != tt.tables {
				t.Errorf("daily_reports exists: %v, want %v", got, tt.tables)
			}
			if (b.Redis != nil) != tt.hasRedis {
				t.Errorf("Redis client %v, want one: %v", b.Redis, tt.hasRedis)
			}
		})
	}
	bad := config.Common{DatabaseURL: "sqlite:" + filepath.Join(dir, "bad.db"), RedisURL: "http://not-redis", MigrateOnStart: true}
	if b, err := backend.Open(ctx, bad, nil, backend.Given{}, reports.Migrations); err == nil {
		b.Close()
		t.Fatal("Open accepted a REDIS_URL that is not redis://")
	}
}

// A database and a Redis client the caller opened are used as they are: not migrated, and still
// open after Close.
func TestOpenGiven(t *testing.T) {
	ctx := context.Background()
	gdb, err := db.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "given.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(gdb)
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rc.Close()
	cfg := config.Common{DatabaseURL: "sqlite:" + filepath.Join(t.TempDir(), "not-opened.db"), MigrateOnStart: true}
	b, err := backend.Open(ctx, cfg, nil, backend.Given{DB: gdb, Redis: rc}, reports.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	if b.DB != gdb || b.Redis != rc {
		t.Fatal("Open replaced what it was given")
	}
	b.Close()
	if gdb.Migrator().HasTable("daily_reports") {
		t.Error("Open migrated a given database")
	}
	if err := db.Ping(gdb)(ctx); err != nil {
		t.Errorf("Close closed the given database: %v", err)
	}
	if err := rc.Ping(ctx).Err(); errors.Is(err, redis.ErrClosed) {
		t.Errorf("Close closed the given Redis client")
	}
}
