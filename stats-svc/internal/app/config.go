package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/config"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/stats-svc/internal/cache"
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
