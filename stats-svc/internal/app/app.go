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

// Defaults of the configuration (README.md, Configuration).
const (
	DefaultAddr        = ":8082"
	DefaultDatabaseURL = "sqlite:./data/stats.db"
	DefaultCDN         = "https://cdn.discordapp.com"
	// RateLimitKeyPrefix starts the Redis keys of the client addresses' request buckets.
	RateLimitKeyPrefix = "stats:ratelimit:"
	// DefaultRateLimit is RATE_LIMIT_PER_MINUTE's default: ten requests a second from one
	// address, far above a dashboard (about ten requests a page) or a script polling.
	DefaultRateLimit = 600
	// DefaultColdWait is COLD_QUERY_WAIT's default.
	DefaultColdWait = time.Second
	// DefaultStaleIfError is STALE_IF_ERROR's default.
	DefaultStaleIfError = cache.DefaultStaleIfError
	// DefaultCacheMaxTTL is CACHE_MAX_TTL's default.
	DefaultCacheMaxTTL = 10 * time.Minute
	// DefaultDatabaseReadTimeout is DATABASE_READ_TIMEOUT's default.
	DefaultDatabaseReadTimeout = 10 * time.Second
)

// Config is stats-svc's configuration.
type Config struct {
	config.Common
	// CDN is the base of icon and banner links (CDN_BASE_URL).
	CDN string
	// DatabaseReadURL is a read replica of DatabaseURL (DATABASE_READ_URL; "" = none): every
	// read goes there while it answers.
	DatabaseReadURL string
	// RateLimit is the token bucket of each client address (RATE_LIMIT_PER_MINUTE,
	// RATE_LIMIT_BURST).
	RateLimit ratelimit.Config
	// ColdLimit bounds the answers read from the database at once (COLD_QUERY_LIMIT; 0: half
	// the database pool, see coldLimit), ColdWait how long a request waits for a turn before
	// 503 service_busy (COLD_QUERY_WAIT).
	ColdLimit int
	ColdWait  time.Duration
	// StaleIfError is how long past its validity a cached answer is still served while the
	// database is unreachable (STALE_IF_ERROR; 0: never).
	StaleIfError time.Duration
	// CacheMaxTTL caps how long a cached answer is served fresh (CACHE_MAX_TTL).
	CacheMaxTTL time.Duration
	// DatabaseReadTimeout bounds every read of an answer (DATABASE_READ_TIMEOUT): past it the
	// database counts as unreachable.
	DatabaseReadTimeout time.Duration
}

// LoadConfig reads the environment: the common variables, CDN_BASE_URL, DATABASE_READ_URL,
// RATE_LIMIT_PER_MINUTE, RATE_LIMIT_BURST, COLD_QUERY_LIMIT, COLD_QUERY_WAIT, STALE_IF_ERROR,
// CACHE_MAX_TTL and DATABASE_READ_TIMEOUT.
func LoadConfig() (Config, error) {
	common, err := config.LoadCommon(DefaultAddr, DefaultDatabaseURL)
	if err != nil {
		return Config{}, err
	}
	cdn, err := cdnBase(config.String("CDN_BASE_URL", DefaultCDN))
	if err != nil {
		return Config{}, err
	}
	perMinute, err := config.Int("RATE_LIMIT_PER_MINUTE", DefaultRateLimit)
	if err != nil {
		return Config{}, err
	}
	burst, err := config.Int("RATE_LIMIT_BURST", defaultBurst(perMinute))
	if err != nil {
		return Config{}, err
	}
	rl := ratelimit.Config{PerMinute: perMinute, Burst: burst}
	if err := rl.Validate(); err != nil {
		return Config{}, fmt.Errorf("RATE_LIMIT_PER_MINUTE, RATE_LIMIT_BURST: %w", err)
	}
	cold, err := config.Int("COLD_QUERY_LIMIT", 0)
	if err != nil {
		return Config{}, err
	}
	if cold < 0 {
		return Config{}, fmt.Errorf("COLD_QUERY_LIMIT must be 0 (half the database pool) or more, not %d", cold)
	}
	wait, err := config.Duration("COLD_QUERY_WAIT", DefaultColdWait)
	if err != nil {
		return Config{}, err
	}
	if wait <= 0 || wait > time.Minute {
		return Config{}, fmt.Errorf("COLD_QUERY_WAIT must be above 0 and at most 1m, not %v", wait)
	}
	stale, err := config.Duration("STALE_IF_ERROR", DefaultStaleIfError)
	if err != nil {
		return Config{}, err
	}
	if stale < 0 || stale > 7*24*time.Hour {
		return Config{}, fmt.Errorf("STALE_IF_ERROR must be 0 (never) to 168h, not %v", stale)
	}
	ttl, err := config.Duration("CACHE_MAX_TTL", DefaultCacheMaxTTL)
	if err != nil {
		return Config{}, err
	}
	if ttl < time.Second || ttl > time.Hour {
		return Config{}, fmt.Errorf("CACHE_MAX_TTL must be 1s to 1h, not %v", ttl)
	}
	readTimeout, err := config.Duration("DATABASE_READ_TIMEOUT", DefaultDatabaseReadTimeout)
	if err != nil {
		return Config{}, err
	}
	if readTimeout < 100*time.Millisecond || readTimeout > 5*time.Minute {
		return Config{}, fmt.Errorf("DATABASE_READ_TIMEOUT must be 100ms to 5m, not %v", readTimeout)
	}
	return Config{Common: common, CDN: cdn, DatabaseReadURL: config.String("DATABASE_READ_URL", ""),
		RateLimit: rl, ColdLimit: cold, ColdWait: wait, StaleIfError: stale, CacheMaxTTL: ttl,
		DatabaseReadTimeout: readTimeout}, nil
}

// defaultBurst is RATE_LIMIT_BURST's default: a sixth of the minute's allowance (100 at the
// default 600), so that a dashboard and a few reloads go through at once, at least 1.
func defaultBurst(perMinute int) int { return max(perMinute/6, 1) }

// staleOption is the cache's StaleIfError for STALE_IF_ERROR: 0 (never) is the cache's negative.
func staleOption(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// coldLimit is the bound on answers read from the database at once: configured, or half of the
// database pool (25 connections on PostgreSQL: 12; SQLite's one: 1), which leaves the other
// half to the second connection of split ranges, the generation poll and /metrics, so that a
// burst of distinct queries queues for a turn in the service, briefly, rather than for a
// connection.
func coldLimit(configured int, gdb *gorm.DB) int {
	if configured > 0 {
		return configured
	}
	if sqlDB, err := gdb.DB(); err == nil {
		if n := sqlDB.Stats().MaxOpenConnections; n > 0 {
			return max(n/2, 1)
		}
	}
	return 1
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
	chat      *chatmetrics.Collector // registered on the default registry until Close; nil if not
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
	watch, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	s := &Service{Cache: c, Redis: rc != nil, backend: b, reads: reads, stopWatch: stopWatch, watching: make(chan struct{})}
	go func() {
		defer close(s.watching)
		c.Run(watch)
	}()

	rl := cfg.RateLimit
	if rl == (ratelimit.Config{}) { // a Config built without LoadConfig: the defaults
		rl = ratelimit.Config{PerMinute: DefaultRateLimit, Burst: defaultBurst(DefaultRateLimit)}
	}
	var limiter httpapi.Limiter = ratelimit.NewLocal(rl, nil)
	if rc != nil {
		// Shared by the replicas; the in-process buckets serve while Redis fails.
		limiter = ratelimit.NewRedis(rc, RateLimitKeyPrefix, rl, log)
	}
	s.Handler = Handler(log, c, gdb, HandlerOptions{Now: time.Now, Limiter: limiter, CDN: cfg.CDN, HTTP: cfg.HTTP, StaleIfError: cfg.StaleIfError})
	s.registerChatMetrics(gdb, reads, log)
	return s, nil
}

// HandlerOptions are what Handler needs besides the answers and the database.
type HandlerOptions struct {
	// Now is the clock (time.Now in production).
	Now func() time.Time
	// Limiter limits each client address (nil: no limit).
	Limiter httpapi.Limiter
	// CDN is the origin of the icons and banners the dashboard shows (CDN_BASE_URL).
	CDN string
	// HTTP is the server's configuration (read timeout, trusted proxies).
	HTTP config.HTTP
	// StaleIfError is announced in every answer's Cache-Control (0: not announced).
	StaleIfError time.Duration
}

// Handler is the service's HTTP handler: shared/server's middleware and probes (/readyz pings
// database), the API answering from source at the clock opts.Now, the rate limit, and the
// dashboard. New serves it over the cache; the API tests build it over their own store and fixed
// clock, so that they answer every route as production does.
func Handler(log *slog.Logger, source httpapi.Reports, database *gorm.DB, opts HandlerOptions) *echo.Echo {
	e := server.New(server.Options{
		HTTP:         opts.HTTP,
		Name:         "stats-svc",
		Logger:       log,
		ErrorHandler: httpapi.ErrorHandler,
		// Redis is not a readiness dependency: without it the service still
		// answers, from the database. Nor is the read replica: the primary answers
		// while it is down.
		Ready: []server.Check{{Name: "database", Fn: db.Ping(database)}},
	})
	httpapi.Register(e, source, httpapi.Options{Now: opts.Now, Limiter: opts.Limiter, StaleIfError: opts.StaleIfError})
	web.Register(e, web.Options{CDN: opts.CDN}) // the dashboard at /
	return e
}

// registerChatMetrics exports the stored counts on /metrics (the default registry, which
// shared/server serves). A second Service in one process (tests) leaves the first one's.
func (s *Service) registerChatMetrics(gdb *gorm.DB, reads *db.Reads, log *slog.Logger) {
	src := chatmetrics.NewDB(gdb)
	src.RouteReads(reads)
	chat := chatmetrics.New(src, chatmetrics.Options{Logger: log})
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
