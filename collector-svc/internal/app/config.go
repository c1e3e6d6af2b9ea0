package app

import (
	"fmt"
	"net/url"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/collector-svc/internal/livegw"
	"forumstats.local/collector-svc/internal/livereport"
	"forumstats.local/shared/config"
)

// Defaults of the configuration (README.md, Configuration).
const (
	DefaultAddr        = ":8083"
	DefaultDatabaseURL = "sqlite:./data/stats.db"
)

// Config is collector-svc's configuration.
type Config struct {
	config.Common
	Collector Collector
}

// Collector is the collector's own configuration: what serve and run-once need beyond the
// common variables.
type Collector struct {
	Token       string // DISCORD_TOKEN; "" sends no Authorization (only a fake Discord accepts that)
	APIBase     string // DISCORD_API_BASE
	CatalogFile string // CATALOG_FILE; "" keeps the stored catalog
	// MaxRPS is DISCORD_MAX_RPS, the client's cap in requests per second over all routes:
	// Discord's global 50 by default; lower shares the bot's budget with other work. Higher is only
	// for a fake with a higher limit (the benchmark's short runs).
	MaxRPS         int
	RefreshMinutes int           // REFRESH_MINUTES, recorded for stats-svc
	Interval       time.Duration // REFRESH_INTERVAL, the pause between passes (default REFRESH_MINUTES)
	// LiveFlushInterval is LIVE_FLUSH_INTERVAL: how often live counts are flushed with their
	// gateway checkpoint (internal/live).
	LiveFlushInterval time.Duration
	// LiveGapDelay is LIVE_GAP_DELAY: how long after a gap of live counting ends its search waits
	// (internal/livereport).
	LiveGapDelay time.Duration
	// Gateway is DISCORD_GATEWAY=on, the default: serve also counts live from the gateway
	// (internal/livegw), and today's and this month's reports of the servers counted live are
	// written from live counts, not by the REST pass. off: search only.
	Gateway bool
	// ShardLockRetry is LIVE_SHARD_LOCK_RETRY: how often a replica tries the locks of the gateway
	// shards no replica holds.
	ShardLockRetry time.Duration
}

// LoadConfig reads the environment for serve and run-once: the collector's own variables, checked
// first, then the common ones.
func LoadConfig() (Config, error) {
	c, err := loadCollector()
	if err != nil {
		return Config{}, err
	}
	cfg, err := LoadCommonConfig()
	cfg.Collector = c
	return cfg, err
}

// LoadCommonConfig reads only the common variables: import and export do not collect, so a
// collector variable cannot stop them.
func LoadCommonConfig() (Config, error) {
	common, err := config.LoadCommon(DefaultAddr, DefaultDatabaseURL)
	return Config{Common: common}, err
}

func loadCollector() (Collector, error) {
	c := Collector{
		Token:       config.String("DISCORD_TOKEN", ""),
		APIBase:     config.String("DISCORD_API_BASE", discord.DefaultBaseURL),
		CatalogFile: config.String("CATALOG_FILE", ""),
	}
	if u, err := url.Parse(c.APIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("DISCORD_API_BASE: %q is not an http(s) URL", c.APIBase)
	}
	var err error
	if c.MaxRPS, err = config.Int("DISCORD_MAX_RPS", discord.DefaultGlobalRate); err != nil {
		return c, err
	}
	if c.MaxRPS <= 0 {
		return c, fmt.Errorf("DISCORD_MAX_RPS: must be a positive number of requests per second, got %d", c.MaxRPS)
	}
	if c.RefreshMinutes, err = config.Int("REFRESH_MINUTES", 10); err != nil {
		return c, err
	}
	if c.RefreshMinutes <= 0 {
		return c, fmt.Errorf("REFRESH_MINUTES: must be a positive number of minutes, got %d", c.RefreshMinutes)
	}
	// REFRESH_INTERVAL (a Go duration) overrides the pause for tests and operations; stats-svc
	// is still told REFRESH_MINUTES.
	if c.Interval, err = config.Duration("REFRESH_INTERVAL", time.Duration(c.RefreshMinutes)*time.Minute); err != nil {
		return c, err
	}
	if c.Interval <= 0 {
		return c, fmt.Errorf("REFRESH_INTERVAL: must be positive, got %s", c.Interval)
	}
	if c.LiveFlushInterval, err = config.Duration("LIVE_FLUSH_INTERVAL", live.DefaultFlushInterval); err != nil {
		return c, err
	}
	if c.LiveFlushInterval <= 0 {
		return c, fmt.Errorf("LIVE_FLUSH_INTERVAL: must be positive, got %s", c.LiveFlushInterval)
	}
	if c.LiveGapDelay, err = config.Duration("LIVE_GAP_DELAY", livereport.DefaultGapDelay); err != nil {
		return c, err
	}
	if c.LiveGapDelay <= 0 {
		return c, fmt.Errorf("LIVE_GAP_DELAY: must be positive, got %s", c.LiveGapDelay)
	}
	switch v := config.String("DISCORD_GATEWAY", "on"); v {
	case "on":
		c.Gateway = true
	case "off":
	default:
		return c, fmt.Errorf("DISCORD_GATEWAY: must be on or off, got %q", v)
	}
	if c.ShardLockRetry, err = config.Duration("LIVE_SHARD_LOCK_RETRY", livegw.DefaultLockRetry); err != nil {
		return c, err
	}
	if c.ShardLockRetry <= 0 {
		return c, fmt.Errorf("LIVE_SHARD_LOCK_RETRY: must be positive, got %s", c.ShardLockRetry)
	}
	if c.CatalogFile != "" {
		// Fail at start on a broken file; every pass reads it again.
		if _, err := catalog.Load(c.CatalogFile); err != nil {
			return c, fmt.Errorf("CATALOG_FILE: %w", err)
		}
	}
	return c, nil
}
