// Package app builds forum-svc from its configuration: the HTTP service (database, Redis, rate
// limiter, authenticator, handler) and each command of the CLI (commands.go). The command's main
// only parses flags and dispatches here; the tests build the service through it too, and the
// benchmark runs the built command, so that all of them run the same thing.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/httpapi"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/backend"
	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/server"
)

// Defaults of the configuration (README.md, Configuration).
const (
	DefaultAddr        = ":8081"
	DefaultDatabaseURL = "sqlite:./data/forum.db"
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
}

// DefaultRetrySweepInterval is IDEMPOTENCY_SWEEP_INTERVAL's default.
const DefaultRetrySweepInterval = 10 * time.Minute

// LoadConfig reads the environment: the common variables, RATE_LIMIT_PER_MINUTE (default 600),
// RATE_LIMIT_BURST (default a tenth of the minute's allowance, at least 1), AUTH_FAILURES_PER_MINUTE
// (default 30), AUTH_FAILURES_BURST (default 10), AUTH_KEY_LOOKUPS_PER_SECOND (default 100),
// DATABASE_READ_URL, READ_PRIMARY_AFTER_WRITE and IDEMPOTENCY_SWEEP_INTERVAL.
func LoadConfig() (Config, error) {
	common, err := config.LoadCommon(DefaultAddr, DefaultDatabaseURL)
	if err != nil {
		return Config{}, err
	}
	perMinute, err := config.Int("RATE_LIMIT_PER_MINUTE", 600)
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
	return Config{Common: common, RateLimit: rl, AuthFailures: failures, KeyLookupsPerSecond: lookups,
		DatabaseReadURL:   config.String("DATABASE_READ_URL", ""),
		PrimaryAfterWrite: pin, RetrySweepInterval: sweep}, nil
}

// openDB opens the database of url for a command, applying pending migrations first when apply
// is set: the `migrate` command always sets it, every other command sets cfg.MigrateOnStart.
func openDB(ctx context.Context, url string, log *slog.Logger, apply bool) (*gorm.DB, error) {
	return migrate.Open(ctx, url, log, apply, migrations.Set)
}

// Service is the assembled HTTP service.
type Service struct {
	Handler *echo.Echo

	retries retrySweeper // the store: its sweep deletes on the primary, whatever the reads use
	log     *slog.Logger
	now     func() time.Time
}

// Options tune NewService beyond the configuration (tests use them).
type Options struct {
	// Auth tunes the authenticator (its KeyLookupsPerSecond is AUTH_KEY_LOOKUPS_PER_SECOND).
	Auth auth.Options
	// AuthFailures is the bucket of failed authentications per client address; zero: the defaults.
	AuthFailures ratelimit.Config
	Now          func() time.Time
	// Reads routes reads to a replica (nil or without one: all on gdb).
	Reads *db.Reads
	// HTTP is the server's configuration (config.Common.HTTP).
	HTTP config.HTTP
}

// NewService builds the HTTP service over an open database and an optional Redis client (nil:
// in-process rate limits).
func NewService(gdb *gorm.DB, rc *redis.Client, rl ratelimit.Config, log *slog.Logger, opts Options) (*Service, error) {
	st, err := store.New(gdb)
	if err != nil {
		return nil, err
	}
	st.RouteReads(opts.Reads)
	if opts.Auth.Now == nil {
		opts.Auth.Now = opts.Now
	}
	if opts.AuthFailures == (ratelimit.Config{}) {
		opts.AuthFailures = ratelimit.Config{PerMinute: DefaultAuthFailuresPerMinute, Burst: DefaultAuthFailuresBurst}
	}
	var limiter httpapi.Limiter = ratelimit.NewLocal(rl, opts.Now)
	var failures httpapi.Limiter = ratelimit.NewLocal(opts.AuthFailures, opts.Now)
	ready := []server.Check{{Name: "database", Fn: db.Ping(gdb)}}
	if rc != nil {
		limiter = ratelimit.NewRedis(rc, RateLimitKeyPrefix, rl, log)
		failures = ratelimit.NewRedis(rc, AuthFailuresKeyPrefix, opts.AuthFailures, log)
		// Redis is optional for correctness (the limiters fall back), so it is not a readiness check.
	}
	h := httpapi.New(httpapi.Deps{
		Conversations: conversation.NewService(st, opts.Now),
		Auth:          auth.New(st, opts.Auth),
		Limiter:       limiter,
		AuthFailures:  failures,
		Logger:        log,
		Ready:         ready,
		HTTP:          opts.HTTP,
		Now:           opts.Now,
	})
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{Handler: h, retries: st, log: log, now: opts.Now}, nil
}

// Serve runs `forum-svc serve` until ctx is done.
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	b, err := backend.Open(ctx, cfg.Common, log, migrations.Set)
	if err != nil {
		return err
	}
	defer b.Close()
	reads, err := db.OpenReads(b.DB, cfg.DatabaseReadURL, db.ReadsOptions{Service: "forum-svc", PinFor: cfg.PrimaryAfterWrite, Logger: log})
	if err != nil {
		return err
	}
	defer reads.Close()
	// The replica is no readiness check: the primary answers while it is down.
	svc, err := NewService(b.DB, b.Redis, cfg.RateLimit, log, Options{Reads: reads, HTTP: cfg.HTTP, AuthFailures: cfg.AuthFailures,
		Auth: auth.Options{KeyLookupsPerSecond: cfg.KeyLookupsPerSecond}})
	if err != nil {
		return fmt.Errorf("build service: %w", err)
	}
	// The sweep ends before the database closes, also when the server fails to start.
	defer svc.startSweep(ctx, cfg.RetrySweepInterval)()
	return server.Run(ctx, svc.Handler, cfg.HTTPAddr, log)
}
