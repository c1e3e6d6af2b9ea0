package app

import (
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/shared/backend"
	"forumstats.local/stats-svc/internal/httpapi"
)

// Option is New's test seam: a dependency the caller (a test, a benchmark) already opened or
// built, which New uses instead of the one the configuration names. What the caller opened stays
// the caller's to close: App.Close leaves it open. forum-svc and collector-svc have the same
// options for the same dependencies.
type Option func(*options)

type options struct {
	given   backend.Given
	now     func() time.Time
	reports httpapi.Reports
	limiter httpapi.Limiter
}

func collect(opts []Option) options {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithDB makes New use gdb, already opened (and migrated, if the test wants a schema), instead
// of opening DATABASE_URL.
func WithDB(gdb *gorm.DB) Option { return func(o *options) { o.given.DB = gdb } }

// WithRedis makes New use rc instead of opening REDIS_URL.
func WithRedis(rc *redis.Client) Option { return func(o *options) { o.given.Redis = rc } }

// WithClock makes now the service's clock (time.Now otherwise): the answers' and the rate
// limit's.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithReports makes r the source of the API's answers instead of the cache over the store that
// New builds (and then follows nothing): the API tests answer from the store directly, or from
// a cache they tuned.
func WithReports(r httpapi.Reports) Option { return func(o *options) { o.reports = r } }

// WithLimiter makes l the limit of each client address instead of the bucket of
// RATE_LIMIT_PER_MINUTE and RATE_LIMIT_BURST.
func WithLimiter(l httpapi.Limiter) Option { return func(o *options) { o.limiter = l } }
