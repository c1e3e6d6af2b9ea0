// Package ratelimit limits requests per key (an API key, a client address) with a token bucket: Burst tokens at most,
// refilled at PerMinute/60 tokens a second, one token a request.
//
// With Redis the buckets live there, so replicas agree: a replica takes tokens from a key's
// bucket in short leases (one atomic Lua script call a lease, one token for a sparse key, more
// for a hot one) and serves requests from them. A Redis that fails never fails a request: the
// limiter falls back to its in-process buckets until Redis answers again.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Config is the bucket shape.
type Config struct {
	PerMinute int // refill rate, tokens a minute (at least 1)
	Burst     int // bucket size (at least 1)
}

// Validate checks the shape.
func (c Config) Validate() error {
	if c.PerMinute < 1 {
		return fmt.Errorf("the rate must be at least 1 a minute, got %d", c.PerMinute)
	}
	if c.Burst < 1 {
		return fmt.Errorf("the burst must be at least 1, got %d", c.Burst)
	}
	return nil
}

// DefaultBurst is the burst when none is configured: a tenth of the minute's allowance, at least 1.
func DefaultBurst(perMinute int) int { return max(perMinute/10, 1) }

func (c Config) ratePerSecond() float64 { return float64(c.PerMinute) / 60 }

// Decision is the outcome for one request.
type Decision struct {
	Allowed bool
	// RetryAfter is how long until the next token, when refused.
	RetryAfter time.Duration
}

// RetryAfterSeconds is the Retry-After header value: whole seconds, rounded up, at least 1.
func (d Decision) RetryAfterSeconds() int64 {
	return max(int64(math.Ceil(d.RetryAfter.Seconds())), 1)
}

// Local keeps buckets in process.
type Local struct {
	cfg Config
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	calls   int
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewLocal returns an in-process limiter. now is the clock (time.Now when nil).
func NewLocal(cfg Config, now func() time.Time) *Local {
	if now == nil {
		now = time.Now
	}
	return &Local{cfg: cfg, now: now, buckets: map[string]*bucket{}}
}

// Allow takes a token from key's bucket if it has one.
func (l *Local) Allow(_ context.Context, key string) Decision {
	now := l.now()
	rate, burst := l.cfg.ratePerSecond(), float64(l.cfg.Burst)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls%4096 == 0 {
		l.sweep(now, rate, burst)
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: burst, at: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = math.Min(burst, b.tokens+elapsed*rate)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return Decision{Allowed: true}
	}
	wait := (1 - b.tokens) / rate
	return Decision{RetryAfter: time.Duration(wait * float64(time.Second))}
}

// sweep forgets buckets that have refilled completely: they are the same as new ones.
func (l *Local) sweep(now time.Time, rate, burst float64) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*rate >= burst {
			delete(l.buckets, k)
		}
	}
}
