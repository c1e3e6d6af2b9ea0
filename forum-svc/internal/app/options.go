package app

import (
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/backend"
)

// Option is New's test seam: a dependency the caller (a test, a benchmark) already opened, which
// New uses instead of the one the configuration names. What the caller opened stays the caller's
// to close: App.Close leaves it open. stats-svc and collector-svc have the same options for the
// same dependencies.
type Option func(*options)

type options struct {
	given  backend.Given
	now    func() time.Time
	stream event.StreamOptions
}

func collect(opts []Option) options {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithDB makes New use gdb, already opened (and migrated), instead of opening DATABASE_URL. A
// read replica is still DATABASE_READ_URL's.
func WithDB(gdb *gorm.DB) Option { return func(o *options) { o.given.DB = gdb } }

// WithRedis makes New use rc instead of opening REDIS_URL.
func WithRedis(rc *redis.Client) Option { return func(o *options) { o.given.Redis = rc } }

// WithClock makes now the service's clock (time.Now otherwise): the answers', the
// authenticator's and the rate limits'.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithStreamOptions sets the event streams' heartbeat, write timeout and key check (tests that
// need them shorter than the defaults).
func WithStreamOptions(so event.StreamOptions) Option { return func(o *options) { o.stream = so } }
