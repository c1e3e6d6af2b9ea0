// Package app builds stats-svc from its configuration: the HTTP service (database, Redis, the
// cache over the store, the handler) and the migrate command. The command's main only parses its
// arguments and dispatches here; the tests build the service through it too, and the benchmark
// runs the built command, so that all of them run the same thing.
package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"forumstats.local/shared/backend"
	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/metrics"
	"forumstats.local/stats-svc/internal/report"
	"forumstats.local/stats-svc/internal/store"
	"forumstats.local/stats-svc/internal/web"
)

// Defaults of contract section 2.
const (
	DefaultAddr        = ":8082"
	DefaultDatabaseURL = "sqlite:./data/stats.db"
	DefaultCDN         = "https://cdn.discordapp.com"
)

// Config is stats-svc's configuration.
type Config struct {
	config.Common
	// CDN is the base of icon and banner links (CDN_BASE_URL).
	CDN string
	// DatabaseReadURL is a read replica of DatabaseURL (DATABASE_READ_URL; "" = none): every
	// read goes there while it answers.
	DatabaseReadURL string
}

// LoadConfig reads the environment: the common variables and CDN_BASE_URL.
func LoadConfig() (Config, error) {
	common, err := config.LoadCommon(DefaultAddr, DefaultDatabaseURL)
	if err != nil {
		return Config{}, err
	}
	cdn, err := cdnBase(config.String("CDN_BASE_URL", DefaultCDN))
	if err != nil {
		return Config{}, err
	}
	return Config{Common: common, CDN: cdn, DatabaseReadURL: config.String("DATABASE_READ_URL", "")}, nil
}

func cdnBase(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return "", fmt.Errorf("CDN_BASE_URL: %q is not an http(s) base URL", s)
	}
	return s, nil
}

// cacheKeyPrefix namespaces the shared Redis cache by what an answer depends on besides the
// query and the generation: two deployments on different databases (whose generation numbers
// may coincide) or with different CDN bases never serve each other's bodies.
func cacheKeyPrefix(databaseURL, cdn string) string {
	sum := sha256.Sum256([]byte(databaseURL + "\x00" + cdn))
	return "stats:v1:" + hex.EncodeToString(sum[:6]) + ":"
}

// Service is the assembled HTTP service. Close releases it.
type Service struct {
	Handler *echo.Echo
	// Cache is the answers' cache in front of the store; it follows the data generation until
	// Close.
	Cache *cache.Cache
	// Redis reports whether the cache shares answers through Redis (REDIS_URL set).
	Redis bool

	backend   *backend.Backend
	reads     *db.Reads
	chat      *metrics.Collector // registered on the default registry until Close; nil if not
	stopWatch context.CancelFunc
	watching  chan struct{}
}

// New builds the service: it opens the database (migrating it unless cfg.MigrateOnStart is
// false) and Redis, and starts following the data generation.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Service, error) {
	b, err := backend.Open(ctx, cfg.Common, log, reports.Migrations)
	if err != nil {
		return nil, err
	}
	reads, err := db.OpenReads(b.DB, cfg.DatabaseReadURL, db.ReadsOptions{Service: "stats-svc", Logger: log})
	if err != nil {
		b.Close()
		return nil, err
	}
	gdb, rc := b.DB, b.Redis
	st := store.New(gdb, report.Links{CDN: cfg.CDN})
	st.RouteReads(reads)
	c := cache.New(st, rc, cache.Options{
		Logger:    log,
		KeyPrefix: cacheKeyPrefix(cfg.DatabaseURL, cfg.CDN),
	})
	if err := c.Refresh(ctx); err != nil {
		log.Warn("cannot read the data generation yet", "err", err)
	}
	watch, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	s := &Service{Cache: c, Redis: rc != nil, backend: b, reads: reads, stopWatch: stopWatch, watching: make(chan struct{})}
	go func() {
		defer close(s.watching)
		c.Run(watch)
	}()

	s.Handler = handler(log, c, gdb, time.Now, cfg.HTTP)
	s.registerChatMetrics(gdb, reads, log)
	return s, nil
}

// Handler is the service's HTTP handler: shared/server's middleware and probes (/readyz pings
// database), the API answering from source at the clock now, and the dashboard. New serves it
// over the cache; the API tests build it over their own store and fixed clock, so that they
// answer every route as production does.
func Handler(log *slog.Logger, source httpapi.Reports, database *gorm.DB, now func() time.Time) *echo.Echo {
	return handler(log, source, database, now, config.HTTP{})
}

// handler is Handler with the server's configuration (config.Common.HTTP).
func handler(log *slog.Logger, source httpapi.Reports, database *gorm.DB, now func() time.Time, http config.HTTP) *echo.Echo {
	e := server.New(server.Options{
		HTTP:         http,
		Name:         "stats-svc",
		Logger:       log,
		ErrorHandler: httpapi.ErrorHandler,
		// Redis is not a readiness dependency: without it the service still
		// answers, from the database. Nor is the read replica: the primary answers
		// while it is down.
		Ready: []server.Check{{Name: "database", Fn: db.Ping(database)}},
	})
	httpapi.Register(e, source, now)
	web.Register(e) // the dashboard at /
	return e
}

// registerChatMetrics exports the stored counts on /metrics (the default registry, which
// shared/server serves). A second Service in one process (tests) leaves the first one's.
func (s *Service) registerChatMetrics(gdb *gorm.DB, reads *db.Reads, log *slog.Logger) {
	src := metrics.NewDB(gdb)
	src.RouteReads(reads)
	chat := metrics.New(src, metrics.Options{Logger: log})
	if err := prometheus.Register(chat); err != nil {
		log.Warn("chat_* metrics not registered", "err", err)
		return
	}
	s.chat = chat
}

// Close stops following the generation and closes Redis and the database.
func (s *Service) Close() {
	s.stopWatch()
	<-s.watching
	if s.chat != nil {
		prometheus.Unregister(s.chat)
	}
	s.reads.Close()
	s.backend.Close()
}

// Serve runs `stats-svc serve` until ctx is done.
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	s, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	log.Info("stats-svc starting", "addr", cfg.HTTPAddr, "redis", s.Redis, "cdn", cfg.CDN, "read_replica", s.reads.Replica())
	return server.Run(ctx, s.Handler, cfg.HTTPAddr, log)
}

// Migrate runs `stats-svc migrate`: it applies the pending migrations whatever
// MIGRATE_ON_START.
func Migrate(ctx context.Context, cfg Config, log *slog.Logger) error {
	return migrate.Apply(ctx, cfg.DatabaseURL, log, reports.Migrations)
}
