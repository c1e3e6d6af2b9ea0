package app

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/ratelimit"
)

// Defaults of the configuration (README.md, Configuration).
const (
	DefaultAddr        = ":8081"
	DefaultDatabaseURL = "sqlite:./data/forum.db"
	// DefaultRateLimit is RATE_LIMIT_PER_MINUTE's default.
	DefaultRateLimit = 600
	// RateLimitKeyPrefix starts the Redis keys of the API keys' request buckets.
	RateLimitKeyPrefix = "forum:ratelimit:"
	// AuthFailuresKeyPrefix starts the Redis keys of the client addresses' buckets of failed
	// authentications.
	AuthFailuresKeyPrefix = "forum:authfail:"
	// DefaultAuthFailuresPerMinute and DefaultAuthFailuresBurst shape an address's bucket of
	// failed authentications: a client that mistypes or rotates a key has ten tries at once and one
	// every two seconds after, a key guesser gets 30 a minute.
	DefaultAuthFailuresPerMinute = 30
	DefaultAuthFailuresBurst     = 10
)

// Config is forum-svc's configuration.
type Config struct {
	config.Common
	RateLimit ratelimit.Config
	// AuthFailures is the bucket of failed authentications per client address
	// (AUTH_FAILURES_PER_MINUTE, AUTH_FAILURES_BURST).
	AuthFailures ratelimit.Config
	// KeyLookupsPerSecond is the process's budget of lookups of keys it has not cached
	// (AUTH_KEY_LOOKUPS_PER_SECOND).
	KeyLookupsPerSecond int
	// DatabaseReadURL is a read replica of DatabaseURL (DATABASE_READ_URL; "" = none).
	DatabaseReadURL string
	// PrimaryAfterWrite is how long a user's reads stay on the primary after that user wrote
	// (READ_PRIMARY_AFTER_WRITE), so that replication lag never undoes their own mark.
	PrimaryAfterWrite time.Duration
	// RetrySweepInterval is the pause between two sweeps of the expired Idempotency-Key answers
	// (IDEMPOTENCY_SWEEP_INTERVAL; 0: no sweep).
	RetrySweepInterval time.Duration
	// Webhooks tunes the delivery of webhooks (WEBHOOK_*).
	Webhooks WebhookConfig
	// EventLogRetention is how long the event log keeps an event (EVENT_LOG_RETENTION): a client
	// that resumes from an older one is told to resync.
	EventLogRetention time.Duration
	// CORSAllowedOrigins are the browser origins that may open the event stream and ask for its
	// tickets (CORS_ALLOWED_ORIGINS, separated by commas; none by default).
	CORSAllowedOrigins []string
}

// DefaultEventLogRetention is EVENT_LOG_RETENTION's default, and its least value: a client may
// resume a stream interrupted for up to a day.
const DefaultEventLogRetention = 24 * time.Hour

// MaxEventLogRetention bounds EVENT_LOG_RETENTION: a month of events per user.
const MaxEventLogRetention = 30 * 24 * time.Hour

// DefaultRetrySweepInterval is IDEMPOTENCY_SWEEP_INTERVAL's default.
const DefaultRetrySweepInterval = 10 * time.Minute

// LoadConfig reads the environment: the common variables, RATE_LIMIT_PER_MINUTE (default 600),
// RATE_LIMIT_BURST (default a tenth of the minute's allowance, at least 1), AUTH_FAILURES_PER_MINUTE
// (default 30), AUTH_FAILURES_BURST (default 10), AUTH_KEY_LOOKUPS_PER_SECOND (default 100),
// DATABASE_READ_URL, READ_PRIMARY_AFTER_WRITE, IDEMPOTENCY_SWEEP_INTERVAL and the WEBHOOK_ variables
// (loadWebhookConfig).
func LoadConfig() (Config, error) {
	common, err := config.LoadCommon(DefaultAddr, DefaultDatabaseURL)
	if err != nil {
		return Config{}, err
	}
	perMinute, err := config.Int("RATE_LIMIT_PER_MINUTE", DefaultRateLimit)
	if err != nil {
		return Config{}, err
	}
	burst, err := config.Int("RATE_LIMIT_BURST", ratelimit.DefaultBurst(perMinute))
	if err != nil {
		return Config{}, err
	}
	rl := ratelimit.Config{PerMinute: perMinute, Burst: burst}
	if err := rl.Validate(); err != nil {
		return Config{}, fmt.Errorf("RATE_LIMIT_PER_MINUTE, RATE_LIMIT_BURST: %w", err)
	}
	failPerMinute, err := config.Int("AUTH_FAILURES_PER_MINUTE", DefaultAuthFailuresPerMinute)
	if err != nil {
		return Config{}, err
	}
	failBurst, err := config.Int("AUTH_FAILURES_BURST", DefaultAuthFailuresBurst)
	if err != nil {
		return Config{}, err
	}
	failures := ratelimit.Config{PerMinute: failPerMinute, Burst: failBurst}
	if err := failures.Validate(); err != nil {
		return Config{}, fmt.Errorf("AUTH_FAILURES_PER_MINUTE, AUTH_FAILURES_BURST: %w", err)
	}
	lookups, err := config.Int("AUTH_KEY_LOOKUPS_PER_SECOND", auth.DefaultKeyLookupsPerSecond)
	if err != nil {
		return Config{}, err
	}
	if lookups < 1 {
		return Config{}, fmt.Errorf("AUTH_KEY_LOOKUPS_PER_SECOND must be at least 1, not %d", lookups)
	}
	pin, err := config.Duration("READ_PRIMARY_AFTER_WRITE", db.DefaultPinAfterWrite)
	if err != nil {
		return Config{}, err
	}
	if pin <= 0 || pin > time.Hour {
		return Config{}, fmt.Errorf("READ_PRIMARY_AFTER_WRITE must be above 0 and at most 1h, not %v", pin)
	}
	sweep, err := config.Duration("IDEMPOTENCY_SWEEP_INTERVAL", DefaultRetrySweepInterval)
	if err != nil {
		return Config{}, err
	}
	// Under a second the sweeps would keep the database busy for nothing; 24 h is the retry window.
	if sweep != 0 && (sweep < time.Second || sweep > 24*time.Hour) {
		return Config{}, fmt.Errorf("IDEMPOTENCY_SWEEP_INTERVAL must be 0 (off) or from 1s to 24h, not %v", sweep)
	}
	hooks, err := loadWebhookConfig()
	if err != nil {
		return Config{}, err
	}
	retention, err := config.Duration("EVENT_LOG_RETENTION", DefaultEventLogRetention)
	if err != nil {
		return Config{}, err
	}
	if retention < DefaultEventLogRetention || retention > MaxEventLogRetention {
		return Config{}, fmt.Errorf("EVENT_LOG_RETENTION must be from 24h to 720h, not %v", retention)
	}
	origins, err := parseOrigins(config.String("CORS_ALLOWED_ORIGINS", ""))
	if err != nil {
		return Config{}, err
	}
	return Config{Common: common, RateLimit: rl, AuthFailures: failures, KeyLookupsPerSecond: lookups,
		DatabaseReadURL:   config.String("DATABASE_READ_URL", ""),
		PrimaryAfterWrite: pin, RetrySweepInterval: sweep, EventLogRetention: retention, CORSAllowedOrigins: origins,
		Webhooks: hooks}, nil
}

// parseOrigins reads CORS_ALLOWED_ORIGINS: origins separated by commas, each a scheme, "://"
// and a host (with its port), as a browser sends them in Origin: no path, no trailing slash, no
// wildcard.
func parseOrigins(s string) ([]string, error) {
	var out []string
	for o := range strings.SplitSeq(s, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" ||
			u.RawQuery != "" || u.User != nil || u.Fragment != "" || strings.HasSuffix(o, "/") {
			return nil, fmt.Errorf("CORS_ALLOWED_ORIGINS: %q is no origin (scheme://host[:port])", o)
		}
		out = append(out, o)
	}
	return out, nil
}
