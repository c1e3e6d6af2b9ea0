package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// bucketScript is the token bucket, atomic in Redis. The clock is Redis's own (TIME), so that
// replicas with drifting clocks still agree. It returns {allowed, seconds to wait} (the wait as a
// string: Redis would truncate a Lua number to an integer).
var bucketScript = redis.NewScript(`
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate)
end
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst / rate) * 1000) + 1000)
return {allowed, tostring(wait)}
`)

// Redis keeps buckets in Redis and falls back to a Local limiter when Redis fails.
type Redis struct {
	client   redis.UniversalClient
	prefix   string // of the buckets' Redis keys: one per service and purpose
	cfg      Config
	fallback *Local
	log      *slog.Logger
	lastWarn atomic.Int64 // Unix seconds of the last "Redis failed" log line
	// skipUntil (Unix nanoseconds): after a failure Redis is left alone for a moment, so that
	// during an outage requests do not each wait for a timeout before falling back.
	skipUntil atomic.Int64
	// timeout bounds one bucket call (redisTimeout); tests of exact counting on a loaded machine
	// raise it, since a slower answer would send the call to the in-process bucket.
	timeout time.Duration
}

const (
	// redisTimeout bounds one bucket call: a slower Redis counts as failed.
	redisTimeout = 50 * time.Millisecond
	// redisBackoff is how long the in-process buckets serve alone after a Redis failure.
	redisBackoff = time.Second
)

// NewRedis returns a limiter sharing its buckets through client, under Redis keys that start with
// prefix (say "forum:ratelimit:"), so that limiters of other services or purposes never share a
// bucket.
func NewRedis(client redis.UniversalClient, prefix string, cfg Config, log *slog.Logger) *Redis {
	if log == nil {
		log = slog.Default()
	}
	return &Redis{client: client, prefix: prefix, cfg: cfg, fallback: NewLocal(cfg, nil), log: log, timeout: redisTimeout}
}

// Allow takes a token from the bucket in Redis; on any Redis error it asks the in-process bucket.
func (r *Redis) Allow(ctx context.Context, key string) Decision {
	if time.Now().UnixNano() < r.skipUntil.Load() {
		return r.fallback.Allow(ctx, key)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := bucketScript.Run(ctx, r.client, []string{r.prefix + key},
		strconv.FormatFloat(r.cfg.ratePerSecond(), 'g', -1, 64), r.cfg.Burst).Slice()
	if err == nil && len(res) == 2 {
		allowed, _ := res[0].(int64)
		waitText, _ := res[1].(string)
		wait, perr := strconv.ParseFloat(waitText, 64)
		if perr == nil {
			return Decision{Allowed: allowed == 1, RetryAfter: time.Duration(wait * float64(time.Second))}
		}
		err = perr
	} else if err == nil {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	r.skipUntil.Store(time.Now().Add(redisBackoff).UnixNano())
	r.warn(err)
	return r.fallback.Allow(ctx, key)
}

// warn logs a Redis failure at most once every 10 seconds, so an outage does not flood the log.
func (r *Redis) warn(err error) {
	now := time.Now().Unix()
	last := r.lastWarn.Load()
	if now-last >= 10 && r.lastWarn.CompareAndSwap(last, now) {
		r.log.Warn("rate limit: Redis unavailable, using in-process buckets", "err", err)
	}
}
