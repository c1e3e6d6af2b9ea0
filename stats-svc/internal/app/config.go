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
}

// LoadConfig reads the environment: the common variables, CDN_BASE_URL, DATABASE_READ_URL,
// RATE_LIMIT_PER_MINUTE, RATE_LIMIT_BURST, COLD_QUERY_LIMIT and COLD_QUERY_WAIT.
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
	return Config{Common: common, CDN: cdn, DatabaseReadURL: config.String("DATABASE_READ_URL", ""),
		RateLimit: rl, ColdLimit: cold, ColdWait: wait}, nil
}

// defaultBurst is RATE_LIMIT_BURST's default: a sixth of the minute's allowance (100 at the
// default 600), so that a dashboard and a few reloads go through at once, at least 1.
func defaultBurst(perMinute int) int { return max(perMinute/6, 1) }

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
