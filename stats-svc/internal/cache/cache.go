// Package cache puts a two-level cache-aside in front of the store: L1 in
// process, L2 in Redis (optional). Keys carry the data generation, so a
// finished collector pass or an import is seen as soon as the generation is,
// not after a TTL; entries also expire at the instant their answer would
// change by time alone. Redis failing or slower than its timeout only costs a
// trip to the database, counted by a metric.
package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"forumstats.local/shared/metrics"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/query"
)

var (
	fallbackTotal = metrics.CounterVec("stats_cache_fallback_total", "Redis cache operations that failed or timed out; the request was served from the database.", "op", "reason")
	lookupsTotal  = metrics.CounterVec("stats_cache_lookups_total", "Answer lookups by where they were found: l1, l2 (Redis), source (database), or stale (a copy past its validity, served while the database is unreachable).", "found")
	foundL1       = lookupsTotal.WithLabelValues("l1")
	foundL2       = lookupsTotal.WithLabelValues("l2")
	foundSource   = lookupsTotal.WithLabelValues("source")
	foundStale    = lookupsTotal.WithLabelValues("stale")
	coldInFlight  = metrics.Gauge("stats_cold_queries_in_flight", "Answers being read from the database now (bounded by COLD_QUERY_LIMIT).")
	coldRefused   = metrics.CounterVec("stats_cold_queries_refused_total", "Requests answered 503 service_busy: the database was already reading COLD_QUERY_LIMIT answers and no turn came within COLD_QUERY_WAIT.").WithLabelValues()
)

// DefaultStaleIfError is Options.StaleIfError's default: a day, long enough to ride out a
// database outage overnight.
const DefaultStaleIfError = 24 * time.Hour

// ErrBusy: the answer is not cached and the database was already reading as many answers as the
// bound allows for longer than the wait; the request may be repeated shortly.
var ErrBusy = errors.New("too many answers being read from the database")

func init() {
	// Every fallback series exists from the start, at 0, so that a rate over
	// it works before the first failure.
	for _, op := range []string{"get", "set"} {
		for _, reason := range []string{"error", "timeout"} {
			fallbackTotal.WithLabelValues(op, reason)
		}
	}
}

// Source is the uncached implementation (the store).
type Source interface {
	Statistics(ctx context.Context, q query.Query, now time.Time) (answers.Answer, error)
	Icons(ctx context.Context, server string) (answers.Answer, error)
	Series(ctx context.Context, q query.Series, now time.Time) (answers.Answer, error)
	Activity(ctx context.Context, q query.Activity, now time.Time) (answers.Answer, error)
	Generation(ctx context.Context) (int64, error)
	// Catalog is who the catalog's servers are, to key one server's answers by its guild id.
	Catalog(ctx context.Context) (answers.Catalog, error)
}

// Options tune the cache; zero values take the defaults.
type Options struct {
	// KeyPrefix namespaces the Redis keys (default "stats:v1:").
	KeyPrefix string
	// RedisTimeout bounds every Redis call (default 50 ms).
	RedisTimeout time.Duration
	// MaxTTL caps how long any entry lives (default 10 min).
	MaxTTL time.Duration
	// Poll is how often the generation is read from the database (default 1 s).
	Poll time.Duration
	// L1Bytes bounds the bodies held in process (default 128 MiB).
	L1Bytes int
	// ColdLimit bounds the reads from the source (the database) running at once: a cached answer
	// never waits for it, a miss waits up to ColdWait for a turn and then fails with ErrBusy, so
	// a burst of distinct queries queues neither in the service nor in the database's pool
	// (0: no bound).
	ColdLimit int
	// ColdWait is how long a miss waits for a turn under ColdLimit (default 1 s).
	ColdWait time.Duration
	// ReadTimeout bounds every read of the source (default 10 s): a database that stops
	// answering without refusing (a lost network, a stopped process) fails the read then,
	// as unreachable, instead of holding every request of the answer until the kernel gives up
	// the connection.
	ReadTimeout time.Duration
	// StaleIfError is how long past its validity an answer is still served while the database
	// is unreachable or busy (default 24 h; negative: never). L1 keeps its copies within its
	// bound; Redis keeps one copy per key, whatever the generation, for that long.
	StaleIfError time.Duration
	Logger       *slog.Logger
}

// Cache serves answers from L1, then Redis, then the source.
type Cache struct {
	src  Source
	rdb  *redis.Client
	opts Options
	log  *slog.Logger
	gen  atomic.Int64
	l1   *l1
	sf   singleflight.Group
	// cold holds a token per read from the source in progress (nil: no bound).
	cold chan struct{}
	// catalog is the newest catalog read, for the guild id of a server parameter.
	catalog atomic.Pointer[answers.Catalog]
}

// New decorates src. rdb may be nil: then only the in-process cache serves.
func New(src Source, rdb *redis.Client, opts Options) *Cache {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "stats:v1:"
	}
	if opts.RedisTimeout <= 0 {
		opts.RedisTimeout = 50 * time.Millisecond
	}
	if opts.MaxTTL <= 0 {
		opts.MaxTTL = 10 * time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.L1Bytes <= 0 {
		opts.L1Bytes = 128 << 20
	}
	if opts.ColdWait <= 0 {
		opts.ColdWait = time.Second
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 10 * time.Second
	}
	if opts.StaleIfError == 0 {
		opts.StaleIfError = DefaultStaleIfError
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Cache{src: src, rdb: rdb, opts: opts, log: log, l1: newL1(opts.L1Bytes)}
	if opts.ColdLimit > 0 {
		c.cold = make(chan struct{}, opts.ColdLimit)
	}
	return c
}

// Generation is the data generation the cache currently serves.
func (c *Cache) Generation() int64 { return c.gen.Load() }

// Statistics answers q from the cache or the source.
func (c *Cache) Statistics(ctx context.Context, q query.Query, now time.Time) (answers.Answer, error) {
	var err error
	if q.Server, err = c.guild(ctx, q.Server); err != nil {
		return answers.Answer{}, err
	}
	return c.get(ctx, "s|"+q.Key(), now, func(ctx context.Context) (answers.Answer, error) {
		return c.src.Statistics(ctx, q, now)
	})
}

// Series answers the daily-series request q from the cache or the source.
func (c *Cache) Series(ctx context.Context, q query.Series, now time.Time) (answers.Answer, error) {
	var err error
	if q.Server, err = c.guild(ctx, q.Server); err != nil {
		return answers.Answer{}, err
	}
	return c.get(ctx, "c|"+q.Key(), now, func(ctx context.Context) (answers.Answer, error) {
		return c.src.Series(ctx, q, now)
	})
}

// Activity answers the hourly-activity request q from the cache or the source.
func (c *Cache) Activity(ctx context.Context, q query.Activity, now time.Time) (answers.Answer, error) {
	var err error
	if q.Server, err = c.guild(ctx, q.Server); err != nil {
		return answers.Answer{}, err
	}
	return c.get(ctx, "h|"+q.Key(), now, func(ctx context.Context) (answers.Answer, error) {
		return c.src.Activity(ctx, q, now)
	})
}

// Icons answers the icons request for server ("" for all). Icons do not
// depend on the clock, only on the data.
func (c *Cache) Icons(ctx context.Context, server string) (answers.Answer, error) {
	server, err := c.guild(ctx, server)
	if err != nil {
		return answers.Answer{}, err
	}
	return c.get(ctx, "i|"+server, time.Now(), func(ctx context.Context) (answers.Answer, error) {
		return c.src.Icons(ctx, server)
	})
}

// guild turns a server parameter into the guild id it names ("" stays: all servers), so that
// every spelling of one server ("2", "02", its guild id) is one cache entry and one read; a
// parameter that names no server is answers.ErrServerNotFound without a read of the reports. The
// catalog is read once per data generation (the collector's catalog changes bump it).
func (c *Cache) guild(ctx context.Context, server string) (string, error) {
	if server == "" {
		return "", nil
	}
	gen := c.gen.Load()
	cat := c.catalog.Load()
	if cat == nil || cat.Generation != gen {
		v, err, _ := c.sf.Do("catalog|"+strconv.FormatInt(gen, 10), func() (any, error) {
			ctx := context.WithoutCancel(ctx)
			release, err := c.enter(ctx)
			if err != nil {
				return nil, err
			}
			defer release()
			cat, err := readWithin(ctx, c.opts.ReadTimeout, c.src.Catalog)
			if err != nil {
				return nil, err
			}
			c.observe(cat.Generation)
			c.catalog.Store(&cat)
			return &cat, nil
		})
		switch {
		case err == nil:
			cat = v.(*answers.Catalog)
		case cat != nil && c.staleAllowed(err):
			// An older generation's catalog names the servers of every answer cached under it.
		default:
			return "", err
		}
	}
	guild, ok := cat.Resolve(server)
	if !ok {
		return "", answers.ErrServerNotFound
	}
	return guild, nil
}

// enter takes a turn to read from the source: at once while fewer than ColdLimit reads run,
// else within ColdWait or ErrBusy. The returned func gives the turn back.
func (c *Cache) enter(ctx context.Context) (func(), error) {
	if c.cold == nil {
		return func() {}, nil
	}
	release := func() {
		<-c.cold
		coldInFlight.Dec()
	}
	select {
	case c.cold <- struct{}{}:
		coldInFlight.Inc()
		return release, nil
	default:
	}
	wait := time.NewTimer(c.opts.ColdWait)
	defer wait.Stop()
	select {
	case c.cold <- struct{}{}:
		coldInFlight.Inc()
		return release, nil
	case <-wait.C:
	case <-ctx.Done():
	}
	coldRefused.Inc()
	return nil, ErrBusy
}

func (c *Cache) get(ctx context.Context, key string, now time.Time, load func(context.Context) (answers.Answer, error)) (answers.Answer, error) {
	gen := c.gen.Load()
	if a, ok := c.l1.get(gen, key, now); ok {
		foundL1.Inc()
		return a, nil
	}
	// One load per key and generation however many requests miss at once
	// (a generation bump makes every popular key miss together).
	v, err, _ := c.sf.Do(strconv.FormatInt(gen, 10)+"|"+key, func() (any, error) {
		// The shared load must not fail because the first caller went away.
		ctx := context.WithoutCancel(ctx)
		if a, ok := c.redisGet(ctx, gen, key, now); ok {
			foundL2.Inc()
			a.ETag = answers.Tag(a.Body)
			c.l1.put(key, a, c.expiry(a, now))
			return a, nil
		}
		release, err := c.enter(ctx)
		if err != nil {
			return c.stale(ctx, key, now, err)
		}
		a, err := readWithin(ctx, c.opts.ReadTimeout, load)
		release()
		if err != nil {
			return c.stale(ctx, key, now, err)
		}
		foundSource.Inc()
		a.ETag = answers.Tag(a.Body)
		c.observe(a.Generation)
		c.l1.put(key, a, c.expiry(a, now))
		c.redisSet(ctx, key, a, now)
		return a, nil
	})
	if err != nil {
		return answers.Answer{}, err
	}
	return v.(answers.Answer), nil
}

// readWithin runs one read of the source within timeout. A read that runs out of it is the
// database unreachable (answers.ErrDatabaseUnavailable), whatever the source made of it: the
// database did not answer in time.
func readWithin[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, err := fn(ctx)
	if err != nil && ctx.Err() != nil && !errors.Is(err, answers.ErrDatabaseUnavailable) {
		err = fmt.Errorf("%w: no answer within %v: %w", answers.ErrDatabaseUnavailable, timeout, err)
	}
	return a, err
}

// staleAllowed reports whether err lets a stale copy answer: the database is unreachable, or
// busy beyond the wait (RFC 5861's stale-if-error: the origin failing, not the request).
func (c *Cache) staleAllowed(err error) bool {
	return c.opts.StaleIfError > 0 && (errors.Is(err, answers.ErrDatabaseUnavailable) || errors.Is(err, ErrBusy))
}

// stale answers key with the newest copy held past its validity, from L1, else Redis, when
// loadErr allows it and the copy is within StaleIfError; else it returns loadErr. The copy has
// its own body and tag, and says it is stale.
func (c *Cache) stale(ctx context.Context, key string, now time.Time, loadErr error) (answers.Answer, error) {
	if !c.staleAllowed(loadErr) {
		return answers.Answer{}, loadErr
	}
	a, ok := c.l1.stale(key, now, c.opts.StaleIfError)
	if !ok {
		if a, ok = c.redisStale(ctx, key, now); ok {
			a.ETag = answers.Tag(a.Body)
		}
	}
	if !ok {
		return answers.Answer{}, loadErr
	}
	foundStale.Inc()
	c.log.Debug("serving a stale answer", "key", key, "valid_until", a.ValidUntil, "err", loadErr)
	a.Stale = true
	return a, nil
}

// expiry is when an entry must stop being served: the answer's own
// validity, capped by MaxTTL.
func (c *Cache) expiry(a answers.Answer, now time.Time) time.Time {
	exp := now.Add(c.opts.MaxTTL)
	if !a.ValidUntil.IsZero() && a.ValidUntil.Before(exp) {
		exp = a.ValidUntil
	}
	return exp
}

func (c *Cache) redisKey(gen int64, key string) string {
	return c.opts.KeyPrefix + strconv.FormatInt(gen, 10) + "|" + key
}

// staleKey names the Redis copy of key kept for StaleIfError past its validity: one per key, the
// newest written, whatever its generation, so that the copies take as many keys as the answers
// asked and not one set per generation.
func (c *Cache) staleKey(key string) string {
	return c.opts.KeyPrefix + "stale|" + key
}

// Redis values are the expiry (Unix ns, 8 bytes big-endian), the generation
// (8 bytes) and the body.
const headerLen = 16

func (c *Cache) redisGet(ctx context.Context, gen int64, key string, now time.Time) (answers.Answer, bool) {
	if c.rdb == nil {
		return answers.Answer{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RedisTimeout)
	defer cancel()
	b, err := c.rdb.Get(ctx, c.redisKey(gen, key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return answers.Answer{}, false
	}
	if err != nil {
		c.fallback("get", err)
		return answers.Answer{}, false
	}
	if len(b) < headerLen {
		return answers.Answer{}, false
	}
	a := decodeValue(b)
	if !now.Before(a.ValidUntil) {
		return answers.Answer{}, false
	}
	return a, true
}

// redisStale reads the stale copy of key: any copy within StaleIfError of its expiry.
func (c *Cache) redisStale(ctx context.Context, key string, now time.Time) (answers.Answer, bool) {
	if c.rdb == nil {
		return answers.Answer{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RedisTimeout)
	defer cancel()
	b, err := c.rdb.Get(ctx, c.staleKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return answers.Answer{}, false
	}
	if err != nil {
		c.fallback("get", err)
		return answers.Answer{}, false
	}
	if len(b) < headerLen {
		return answers.Answer{}, false
	}
	a := decodeValue(b)
	if !now.Before(a.ValidUntil.Add(c.opts.StaleIfError)) {
		return answers.Answer{}, false
	}
	return a, true
}

// decodeValue reads a Redis value at least headerLen long.
func decodeValue(b []byte) answers.Answer {
	return answers.Answer{Body: b[headerLen:], ValidUntil: time.Unix(0, int64(binary.BigEndian.Uint64(b))),
		Generation: int64(binary.BigEndian.Uint64(b[8:]))}
}

func (c *Cache) redisSet(ctx context.Context, key string, a answers.Answer, now time.Time) {
	if c.rdb == nil {
		return
	}
	exp := c.expiry(a, now)
	ttl := exp.Sub(now)
	if ttl < time.Millisecond {
		return
	}
	v := make([]byte, headerLen+len(a.Body))
	binary.BigEndian.PutUint64(v, uint64(exp.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(a.Generation))
	copy(v[headerLen:], a.Body)
	ctx, cancel := context.WithTimeout(ctx, c.opts.RedisTimeout)
	defer cancel()
	// Redis expires it too, a little early rather than late (whole ms). The stale copy lives
	// StaleIfError longer; both go in one round trip.
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, c.redisKey(a.Generation, key), v, ttl.Truncate(time.Millisecond))
		if c.opts.StaleIfError > 0 {
			p.Set(ctx, c.staleKey(key), v, (ttl + c.opts.StaleIfError).Truncate(time.Millisecond))
		}
		return nil
	})
	if err != nil {
		c.fallback("set", err)
	}
}

func (c *Cache) fallback(op string, err error) {
	reason := "error"
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		reason = "timeout"
	}
	fallbackTotal.WithLabelValues(op, reason).Inc()
	c.log.Debug("redis cache unavailable, using the database", "op", op, "reason", reason, "err", err)
}

// observe moves the served generation forward to one seen in the data.
func (c *Cache) observe(gen int64) {
	for {
		cur := c.gen.Load()
		if gen <= cur || c.gen.CompareAndSwap(cur, gen) {
			return
		}
	}
}

// Refresh reads the generation from the database, the source of truth
// (it may also go back, e.g. after a restore).
func (c *Cache) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	before := c.gen.Load()
	gen, err := c.src.Generation(ctx)
	if err != nil {
		return err
	}
	// Lose to a newer generation observed in the data while this read ran.
	c.gen.CompareAndSwap(before, gen)
	return nil
}

// Run follows the generation until ctx is done: it polls the database every
// Poll and, with Redis, also polls at once when a writer announces a new
// generation on reports.GenerationChannel. The announcement is only a wake-up:
// the number is always read from the database.
func (c *Cache) Run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	if c.rdb != nil {
		sub := c.rdb.Subscribe(ctx, reports.GenerationChannel)
		defer sub.Close()
		go func() {
			for range sub.Channel() {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
	}
	tick := time.NewTicker(c.opts.Poll)
	defer tick.Stop()
	failing := false
	for {
		if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
			if !failing {
				c.log.Warn("cannot read the data generation", "err", err)
			}
			failing = true
		} else {
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake:
		}
	}
}
