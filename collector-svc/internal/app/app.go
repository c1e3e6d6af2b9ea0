// Package app builds collector-svc from its configuration: the serving collector, each command of
// the CLI (serve, run-once, import, export) and the fake Discord. The command's main only parses
// flags, dispatches here and handles signals; the benchmark runs the built command, so that both
// run the same thing.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/lock"
	"forumstats.local/collector-svc/internal/store"
	"forumstats.local/shared/backend"
	"forumstats.local/shared/db"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/server"
)

// open opens the reports database (migrating it unless MIGRATE_ON_START=false) and Redis.
func open(ctx context.Context, cfg Config, log *slog.Logger) (*backend.Backend, error) {
	return backend.Open(ctx, cfg.Common, log, backend.Given{}, reports.Migrations)
}

func reportStore(b *backend.Backend, log *slog.Logger) *store.Store {
	return store.New(b.DB, b.Redis, log)
}

// collector is the collector of cfg over b, and the writer lock it collects under.
func collector(cfg Config, b *backend.Backend, log *slog.Logger) (*collect.Collector, *lock.Lock, error) {
	c := cfg.Collector
	if c.Token == "" {
		log.Warn("DISCORD_TOKEN is empty: requests go without authorization (only a fake Discord accepts that)")
	}
	client := discord.New(discord.Config{BaseURL: c.APIBase, Token: c.Token, GlobalRate: float64(c.MaxRPS), Logger: log})
	col := collect.New(collect.Config{
		Discord:        client,
		Store:          reportStore(b, log),
		CatalogFile:    c.CatalogFile,
		RefreshMinutes: c.RefreshMinutes,
		MaxRPS:         float64(c.MaxRPS),
		Logger:         log,
	})
	lk, err := lock.New(b.DB, cfg.DatabaseURL, min(c.Interval, 5*time.Second), log)
	if err != nil {
		return nil, nil, err
	}
	return col, lk, nil
}

// RunOnce runs `collector-svc run-once`: it waits for the writer lock, then runs one pass. The
// error wraps collect.ErrPassFailed when the pass did not refresh everything.
func RunOnce(ctx context.Context, cfg Config, log *slog.Logger) (collect.Result, error) {
	b, err := open(ctx, cfg, log)
	if err != nil {
		return collect.Result{}, err
	}
	defer b.Close()
	col, lk, err := collector(cfg, b, log)
	if err != nil {
		return collect.Result{}, err
	}
	if err := lk.Acquire(ctx); err != nil {
		return collect.Result{}, fmt.Errorf("waiting for the collector lock: %w", err)
	}
	defer lk.Release()
	return col.Pass(ctx)
}

// Serve runs `collector-svc serve` until ctx ends: a pass every interval while this process holds
// the writer lock (a standby otherwise), and /healthz, /readyz and /metrics on HTTP_ADDR. A
// server that cannot listen stops the process.
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	b, err := open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer b.Close()
	col, lk, err := collector(cfg, b, log)
	if err != nil {
		return err
	}
	e := server.New(server.Options{
		Name:   "collector-svc",
		Logger: log,
		HTTP:   cfg.HTTP,
		Ready:  []server.Check{{Name: "database", Fn: db.Ping(b.DB)}},
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	httpErr := make(chan error, 1)
	go func() {
		err := server.Run(ctx, e, cfg.HTTPAddr, cfg.HTTP, log)
		cancel()
		httpErr <- err
	}()
	c := cfg.Collector
	log.Info("collector-svc starting", "addr", cfg.HTTPAddr, "discord", c.APIBase, "catalog_file", c.CatalogFile,
		"refresh_minutes", c.RefreshMinutes, "interval", c.Interval.String(), "redis", b.Redis != nil)
	serveErr := col.Serve(ctx, lk, c.Interval)
	cancel()
	if err := <-httpErr; err != nil {
		return err
	}
	return serveErr
}
