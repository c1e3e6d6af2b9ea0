// Package app builds collector-svc from its configuration. New opens what the configuration names
// (the reports database, migrated unless MIGRATE_ON_START is false, and Redis) and builds the
// collector, its writer lock and the HTTP handler of the probes; Run serves (a pass every interval
// while this process holds the lock, and the probes). Each command of the CLI is a function of
// (ctx, cfg, log, its inputs): Serve, RunOnce, Import, Export (exchange.go), and the fake Discord
// (fakediscord.go), which reads no configuration. The command's main only parses flags,
// dispatches here and handles signals; the tests build the service through New too (options.go:
// the seam that hands New dependencies the test opened itself), and the benchmark runs the built
// command, so that all of them run the same thing.
//
// forum-svc and stats-svc have the same shape: Config and LoadConfig (config.go), New(ctx, cfg,
// log, options) returning an *App with Handler, Run and Close, and each command a function of
// (ctx, cfg, log, its inputs).
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/httpapi"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/collector-svc/internal/livegw"
	"forumstats.local/collector-svc/internal/livereport"
	"forumstats.local/collector-svc/internal/lock"
	"forumstats.local/collector-svc/internal/store"
	"forumstats.local/shared/backend"
	"forumstats.local/shared/db"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/server"
)

// App is the assembled collector. Close releases it.
type App struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler

	backend   *backend.Backend
	collector *collect.Collector
	lock      *lock.Lock
	now       func() time.Time
	// afterFlush, when set, is told of every flush of live counts (livegw.AfterFlush): the gap
	// filler and the writer of reports from live counts join there.
	afterFlush livegw.AfterFlush
	// reporter writes reports from live counts and fills their gaps (DISCORD_GATEWAY=on, unless
	// a test hands its own afterFlush).
	reporter *livereport.Reporter
}

// New builds the collector of cfg: it opens the reports database (migrating it unless
// MIGRATE_ON_START=false) and Redis, and builds the collector, its writer lock and the probes.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*App, error) {
	o := collectOptions(opts)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b, err := open(ctx, cfg, log, o.given)
	if err != nil {
		return nil, err
	}
	col, client, lk, err := collector(cfg, b, log, o.now)
	if err != nil {
		b.Close()
		return nil, err
	}
	h := httpapi.New(httpapi.Options{
		Logger: log,
		HTTP:   cfg.HTTP,
		Ready:  []server.Check{{Name: "database", Fn: db.Ping(b.DB)}},
	})
	a := &App{cfg: cfg, log: log, handler: h, backend: b, collector: col, lock: lk, now: o.now, afterFlush: o.afterFlush}
	if cfg.Collector.Gateway && a.afterFlush == nil {
		a.reporter = livereport.New(livereport.Config{
			Discord: client, Channels: col, Live: live.NewStore(b.DB), Reports: reportStore(b, log),
			GapDelay: cfg.Collector.LiveGapDelay, SearchEvery: time.Duration(cfg.Collector.RefreshMinutes) * time.Minute,
			Now: o.now, Logger: log,
		})
		a.afterFlush = reporterHook{a.reporter}
	}
	return a, nil
}

// reporterHook tells the reporter of each stored flush of a shard this replica holds.
type reporterHook struct{ r *livereport.Reporter }

func (h reporterHook) Flushed(_ context.Context, f livegw.Flushed) error {
	h.r.AfterFlush(livereport.Flush{Shard: f.Shard, NumShards: f.NumShards, Flusher: f.Flusher, Batch: f.Batch})
	return nil
}

// open opens the reports database (migrating it unless MIGRATE_ON_START=false) and Redis, except
// what given holds.
func open(ctx context.Context, cfg Config, log *slog.Logger, given backend.Given) (*backend.Backend, error) {
	return backend.Open(ctx, cfg.Common, log, given, reports.Migrations)
}

func reportStore(b *backend.Backend, log *slog.Logger) *store.Store {
	return store.New(b.DB, b.Redis, log)
}

// collector is the collector of cfg over b, its Discord client, and the writer lock it collects
// under.
func collector(cfg Config, b *backend.Backend, log *slog.Logger, now func() time.Time) (*collect.Collector, *discord.Client, *lock.Lock, error) {
	c := cfg.Collector
	if c.Token == "" {
		log.Warn("DISCORD_TOKEN is empty: requests go without authorization (only a fake Discord accepts that)")
	}
	client := discord.New(discord.Config{BaseURL: c.APIBase, Token: c.Token, GlobalRate: float64(c.MaxRPS), Logger: log})
	var counted collect.LiveCounts
	if c.Gateway {
		// Today's and this month's reports of the servers counted live are the live reporter's.
		counted = live.NewStore(b.DB)
	}
	col := collect.New(collect.Config{
		Discord:        client,
		Store:          reportStore(b, log),
		CatalogFile:    c.CatalogFile,
		RefreshMinutes: c.RefreshMinutes,
		MaxRPS:         float64(c.MaxRPS),
		Live:           counted,
		LiveFresh:      c.LiveGapDelay,
		Now:            now,
		Logger:         log,
	})
	lk, err := lock.New(b.DB, cfg.DatabaseURL, min(c.Interval, 5*time.Second), log)
	if err != nil {
		return nil, nil, nil, err
	}
	return col, client, lk, nil
}

// Handler is the collector's HTTP handler: /healthz, /readyz (pings the database) and /metrics.
func (a *App) Handler() http.Handler { return a.handler }

// Run runs `collector-svc serve` until ctx ends: a pass every interval while this process holds
// the writer lock (a standby otherwise), the handler on HTTP_ADDR and, with DISCORD_GATEWAY=on,
// live counting of the gateway shards this replica holds. A server that cannot listen stops it;
// live counting that stops (a close code after which Discord forbids reconnecting) leaves the
// pass running.
func (a *App) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	httpErr := make(chan error, 1)
	go func() {
		err := server.Run(ctx, a.handler, a.cfg.HTTPAddr, a.cfg.HTTP, a.log)
		cancel()
		httpErr <- err
	}()
	c := a.cfg.Collector
	a.log.Info("collector-svc starting", "addr", a.cfg.HTTPAddr, "discord", c.APIBase, "catalog_file", c.CatalogFile,
		"refresh_minutes", c.RefreshMinutes, "interval", c.Interval.String(), "redis", a.backend.Redis != nil)
	liveDone := make(chan struct{})
	if c.Gateway {
		if a.reporter != nil {
			// Run returns only after the reporter's last step, so before Close closes the database.
			reporterDone := make(chan struct{})
			go func() {
				defer close(reporterDone)
				a.reporter.Run(ctx, c.LiveFlushInterval)
			}()
			defer func() { cancel(); <-reporterDone }()
		}
		go func() {
			defer close(liveDone)
			lc, err := a.liveConfig()
			if err != nil {
				a.log.Error("live counting not started", "err", err)
				return
			}
			// livegw logs why it stopped and sets collector_live_stopped.
			_ = livegw.Run(ctx, lc)
		}()
	} else {
		close(liveDone)
	}
	serveErr := a.collector.Serve(ctx, a.lock, c.Interval)
	cancel()
	<-liveDone
	if err := <-httpErr; err != nil {
		return err
	}
	return serveErr
}

// liveConfig is the configuration of live counting: the shards' locks on the reports database,
// and on PostgreSQL this replica's presence among the others, to take its share of the shards.
func (a *App) liveConfig() (livegw.Config, error) {
	c := a.cfg.Collector
	presence, err := lock.NewPresence(a.backend.DB)
	if err != nil {
		return livegw.Config{}, err
	}
	var replicas livegw.Replicas
	if presence != nil { // not a nil *Presence in the interface
		replicas = presence
	}
	return livegw.Config{
		Replicas: replicas,
		APIBase:  c.APIBase, Token: c.Token, DB: a.backend.DB,
		Lock: func(shard int) (livegw.Locker, error) {
			return lock.NewShard(a.backend.DB, a.cfg.DatabaseURL, shard, c.ShardLockRetry, a.log)
		},
		FlushInterval: c.LiveFlushInterval, LockRetry: c.ShardLockRetry,
		Now: a.now, Logger: a.log, AfterFlush: a.afterFlush,
	}, nil
}

// RunPass waits for the writer lock, then runs one pass. The error wraps collect.ErrPassFailed
// when the pass did not refresh everything.
func (a *App) RunPass(ctx context.Context) (collect.Result, error) {
	if err := a.lock.Acquire(ctx); err != nil {
		return collect.Result{}, fmt.Errorf("waiting for the collector lock: %w", err)
	}
	defer a.lock.Release()
	return a.collector.Pass(ctx)
}

// Close closes what New opened: Redis and the database.
func (a *App) Close() { a.backend.Close() }

// Serve runs `collector-svc serve` until ctx ends.
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	a, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}

// RunOnce runs `collector-svc run-once`: one pass under the writer lock (App.RunPass).
func RunOnce(ctx context.Context, cfg Config, log *slog.Logger) (collect.Result, error) {
	a, err := New(ctx, cfg, log)
	if err != nil {
		return collect.Result{}, err
	}
	defer a.Close()
	return a.RunPass(ctx)
}
