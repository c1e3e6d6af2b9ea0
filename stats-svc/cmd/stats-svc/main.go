// Command stats-svc serves the public message statistics and icons API from
// the reports database that collector-svc writes.
//
//	stats-svc [serve]   apply pending migrations (unless MIGRATE_ON_START=false) and serve
//	stats-svc migrate   apply pending migrations and exit
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"
	// Europe/Moscow must resolve in a scratch container without zoneinfo.
	_ "time/tzdata"

	"gorm.io/gorm"

	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/logging"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/rdb"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/report"
	"forumstats.local/stats-svc/internal/store"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stats-svc:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if len(args) > 0 {
		return fmt.Errorf("%s: unexpected argument %q", cmd, args[0])
	}
	if cmd != "serve" && cmd != "migrate" {
		return fmt.Errorf("unknown command %q (want serve or migrate)", cmd)
	}
	cfg, err := config.LoadCommon(":8082", "sqlite:./data/stats.db")
	if err != nil {
		return err
	}
	cdn, err := cdnBase(config.String("CDN_BASE_URL", "https://cdn.discordapp.com"))
	if err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	ctx, stop := server.SignalContext()
	defer stop()

	gdb, err := db.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	if cmd == "migrate" || cfg.MigrateOnStart {
		applied, err := migrate.Up(ctx, gdb, reports.Migrations)
		if err != nil {
			return err
		}
		log.Info("migrations applied", "component", reports.Migrations.Component, "applied", applied)
	}
	if cmd == "migrate" {
		return nil
	}
	return serve(ctx, cfg, cdn, gdb, log)
}

func serve(ctx context.Context, cfg config.Common, cdn string, gdb *gorm.DB, log *slog.Logger) error {
	redisClient, err := rdb.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	if redisClient != nil {
		defer redisClient.Close()
	}
	reportsCache := cache.New(store.New(gdb, report.Links{CDN: cdn}), redisClient, cache.Options{
		Logger:    log,
		KeyPrefix: cacheKeyPrefix(cfg.DatabaseURL, cdn),
	})
	if err := reportsCache.Refresh(ctx); err != nil {
		log.Warn("cannot read the data generation yet", "err", err)
	}
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go reportsCache.Run(watch)

	e := server.New(server.Options{
		Name:         "stats-svc",
		Logger:       log,
		ErrorHandler: httpapi.ErrorHandler,
		// Redis is not a readiness dependency: without it the service still
		// answers, from the database.
		Ready: []server.Check{{Name: "database", Fn: db.Ping(gdb)}},
	})
	httpapi.Register(e, reportsCache, time.Now)
	log.Info("stats-svc starting", "addr", cfg.HTTPAddr, "redis", redisClient != nil, "cdn", cdn)
	return server.Run(ctx, e, cfg.HTTPAddr, log)
}

// cacheKeyPrefix namespaces the shared Redis cache by what an answer depends on besides the
// query and the generation: two deployments on different databases (whose generation numbers
// may coincide) or with different CDN bases never serve each other's bodies.
func cacheKeyPrefix(databaseURL, cdn string) string {
	sum := sha256.Sum256([]byte(databaseURL + "\x00" + cdn))
	return "stats:v1:" + hex.EncodeToString(sum[:6]) + ":"
}

func cdnBase(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return "", fmt.Errorf("CDN_BASE_URL: %q is not an http(s) base URL", s)
	}
	return s, nil
}
