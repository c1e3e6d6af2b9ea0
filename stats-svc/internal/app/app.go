// Package app builds stats-svc from its configuration. New opens what the configuration names (the
// database, migrated unless MIGRATE_ON_START is false, its read replica and Redis), builds the
// cache over the store and the HTTP handler, and follows the data generation until Close; Run
// serves the handler. Migrate is the one other command. The command's main only parses its
// arguments and dispatches here; the tests build the service through New too (options.go: the
// seam that hands New dependencies the test opened itself), and the benchmark runs the built
// command, so that all of them run the same thing.
//
// forum-svc and collector-svc have the same shape: Config and LoadConfig, New(ctx, cfg, log,
// options) returning an *App with Handler, Run and Close, and each command a function of
// (ctx, cfg, log, its inputs).
package app

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"forumstats.local/shared/backend"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/chatmetrics"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/store"
	"forumstats.local/stats-svc/internal/web"
)

// App is the assembled service. Close releases it.
type App struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler

	backend   *backend.Backend
	reads     *db.Reads
	chat      *chatmetrics.Collector // registered on the default registry until Close; nil if not
	stopWatch context.CancelFunc
	watching  chan struct{} // closed once the cache stops following the generation
}

// New builds the service: it opens the database (migrating it unless cfg.MigrateOnStart is
// false), the read replica and Redis, and starts following the data generation.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*App, error) {
	o := collect(opts)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b, err := backend.Open(ctx, cfg.Common, log, o.given, reports.Migrations)
	if err != nil {
		return nil, err
	}
	reads, err := db.OpenReads(b.DB, cfg.DatabaseReadURL, db.ReadsOptions{Service: "stats-svc", Logger: log})
	if err != nil {
		b.Close()
		return nil, err
	}
	gdb, rc := b.DB, b.Redis
	a := &App{cfg: cfg, log: log, backend: b, reads: reads, stopWatch: func() {}, watching: make(chan struct{})}
	source := o.reports
	if source == nil {
		st := store.New(gdb, answers.Links{CDN: cfg.CDN})
		st.RouteReads(reads)
		c := cache.New(st, rc, cache.Options{
			Logger:       log,
			KeyPrefix:    cacheKeyPrefix(cfg.DatabaseURL, cfg.CDN),
			ColdLimit:    coldLimit(cfg.ColdLimit, gdb),
			ColdWait:     cfg.ColdWait,
			StaleIfError: staleOption(cfg.StaleIfError),
			MaxTTL:       cfg.CacheMaxTTL,
			ReadTimeout:  cfg.DatabaseReadTimeout,
		})
		if err := c.Refresh(ctx); err != nil {
			log.Warn("cannot read the data generation yet", "err", err)
		}
		var watch context.Context
		watch, a.stopWatch = context.WithCancel(context.WithoutCancel(ctx))
		go func() {
			defer close(a.watching)
			c.Run(watch)
		}()
		source = c
	} else {
		close(a.watching)
	}

	limiter := o.limiter
	if limiter == nil {
		rl := cfg.RateLimit
		if rl == (ratelimit.Config{}) { // a Config built without LoadConfig: the defaults
			rl = ratelimit.Config{PerMinute: DefaultRateLimit, Burst: defaultBurst(DefaultRateLimit)}
		}
		limiter = ratelimit.NewLocal(rl, o.now)
		if rc != nil {
			// Shared by the replicas; the in-process buckets serve while Redis fails.
			limiter = ratelimit.NewRedis(rc, RateLimitKeyPrefix, rl, log)
		}
	}
	a.handler = httpapi.New(source, httpapi.Options{
		Now:          o.now,
		Limiter:      limiter,
		StaleIfError: cfg.StaleIfError,
		Logger:       log,
		HTTP:         cfg.HTTP,
		// Redis is not a readiness dependency: without it the service still answers, from
		// the database. Nor is the read replica: the primary answers while it is down.
		Ready:     []server.Check{{Name: "database", Fn: db.Ping(gdb)}},
		Dashboard: web.New(web.Options{CDN: cfg.CDN}), // the dashboard at /
	})
	a.registerChatMetrics(gdb, reads, log)
	return a, nil
}

// Handler is the service's HTTP handler: shared/server's middleware and probes (/readyz pings
// the database), the API, the rate limit and the dashboard.
func (a *App) Handler() http.Handler { return a.handler }

// Run serves the handler on cfg.HTTPAddr until ctx is done (`stats-svc serve`).
func (a *App) Run(ctx context.Context) error {
	a.log.Info("stats-svc starting", "addr", a.cfg.HTTPAddr, "redis", a.backend.Redis != nil, "cdn", a.cfg.CDN,
		"read_replica", a.reads.Replica())
	return server.Run(ctx, a.handler, a.cfg.HTTPAddr, a.cfg.HTTP, a.log)
}

// registerChatMetrics exports the stored counts on /metrics (the default registry, which
// shared/server serves). A second App in one process (tests) leaves the first one's.
func (a *App) registerChatMetrics(gdb *gorm.DB, reads *db.Reads, log *slog.Logger) {
	src := chatmetrics.NewDB(gdb)
	src.RouteReads(reads)
	chat := chatmetrics.New(src, chatmetrics.Options{Logger: log})
	if err := prometheus.Register(chat); err != nil {
		log.Warn("chat_* metrics not registered", "err", err)
		return
	}
	a.chat = chat
}

// Close stops following the generation and closes what New opened: the replica, Redis and the
// database.
func (a *App) Close() {
	a.stopWatch()
	<-a.watching
	if a.chat != nil {
		prometheus.Unregister(a.chat)
	}
	a.reads.Close()
	a.backend.Close()
}

// Serve runs `stats-svc serve` until ctx is done.
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	a, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}

// Migrate runs `stats-svc migrate`: it applies the pending migrations whatever
// MIGRATE_ON_START.
func Migrate(ctx context.Context, cfg Config, log *slog.Logger) error {
	return migrate.Apply(ctx, cfg.DatabaseURL, log, reports.Migrations)
}
