package app

import (
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/livegw"
	"forumstats.local/shared/backend"
)

// Option is New's test seam: a dependency the caller (a test, a benchmark) already opened, which
// New uses instead of the one the configuration names. What the caller opened stays the caller's
// to close: App.Close leaves it open. forum-svc and stats-svc have the same options for the same
// dependencies.
type Option func(*options)

type options struct {
	given      backend.Given
	now        func() time.Time
	afterFlush livegw.AfterFlush
}

func collectOptions(opts []Option) options {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithDB makes New use gdb, already opened (and migrated), instead of opening DATABASE_URL.
func WithDB(gdb *gorm.DB) Option { return func(o *options) { o.given.DB = gdb } }

// WithRedis makes New use rc instead of opening REDIS_URL.
func WithRedis(rc *redis.Client) Option { return func(o *options) { o.given.Redis = rc } }

// WithClock makes now the collector's clock (time.Now otherwise): which days and months a pass
// counts.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithAfterFlush makes h hear of every flush of live counts (DISCORD_GATEWAY=on).
func WithAfterFlush(h livegw.AfterFlush) Option { return func(o *options) { o.afterFlush = h } }
