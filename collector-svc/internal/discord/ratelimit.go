package discord

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// windowTolerance separates "the same rate-limit window, seen by an answer that
// took longer" from "a later window": windows last a second or more, answer
// latencies differ by much less.
const windowTolerance = 250 * time.Millisecond

// limiter paces requests: per Discord bucket (X-RateLimit-*), a global pause
// after a global 429, and a global requests-per-second cap.
type limiter struct {
	pace *pacer

	mu          sync.Mutex
	routeBucket map[string]string  // route template → X-RateLimit-Bucket learned from answers
	buckets     map[string]*bucket // bucket hash (or route, before it is learned) + major parameter
	globalUntil time.Time
}

// bucket is what is known of one Discord rate-limit bucket for one guild.
type bucket struct {
	known        bool      // an answer told the limits, or that there are none (limit 0)
	limit        int       // X-RateLimit-Limit; 0 = none announced
	remaining    int       // permits left in the window, requests in flight counted as spent
	resetAt      time.Time // end of the window on our clock; never earlier than Discord's
	blockedUntil time.Time // after a 429 on this bucket
	inflight     int
	changed      chan struct{} // closed (and replaced) whenever the state changes
}

func newLimiter(perSecond float64) *limiter {
	return &limiter{
		pace:        newPacer(perSecond),
		routeBucket: map[string]string{},
		buckets:     map[string]*bucket{},
	}
}

func (b *bucket) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (l *limiter) bucketLocked(key string) *bucket {
	b := l.buckets[key]
	if b == nil {
		b = &bucket{changed: make(chan struct{})}
		l.buckets[key] = b
	}
	return b
}

// bucketForLocked returns the bucket a request on route for the guild major
// goes through: until an answer names the route's bucket, the route is its own.
func (l *limiter) bucketForLocked(route, major string) *bucket {
	if hash, ok := l.routeBucket[route]; ok {
		return l.bucketLocked(hash + "|" + major)
	}
	return l.bucketLocked("route:" + route + "|" + major)
}

// admitLocked decides whether one more request may go through b now. When it
// may not, it returns how long to wait (0: until the state changes) and why.
func (b *bucket) admitLocked(now time.Time) (ok bool, wait time.Duration, reason string) {
	switch {
	case now.Before(b.blockedUntil):
		return false, b.blockedUntil.Sub(now), waitRetryAfter
	case !b.known:
		// One request discovers the limits; the others wait for its answer.
		if b.inflight == 0 {
			return true, 0, ""
		}
		return false, 0, waitBucket
	case b.limit > 0 && b.remaining <= 0:
		if now.Before(b.resetAt) {
			return false, b.resetAt.Sub(now), waitBucket
		}
		// The window is over; requests still in flight may land in the next one.
		b.remaining = b.limit - b.inflight
		if b.remaining <= 0 {
			return false, 0, waitBucket
		}
	}
	return true, 0, ""
}

// permit is one admitted request; done must be called exactly once.
type permit struct {
	l     *limiter
	b     *bucket
	route string
	major string
}

// acquire waits until a request on route for the guild major may be sent: its
// bucket has a permit, no global pause is running, and the global cap allows it.
func (l *limiter) acquire(ctx context.Context, route, major string) (*permit, error) {
	var p *permit
	for p == nil {
		l.mu.Lock()
		b := l.bucketForLocked(route, major)
		ok, wait, reason := b.admitLocked(time.Now())
		if ok {
			b.inflight++
			if b.limit > 0 {
				b.remaining--
			}
			p = &permit{l: l, b: b, route: route, major: major}
		}
		changed := b.changed
		l.mu.Unlock()
		if ok {
			break
		}
		if err := sleepCtx(ctx, wait, changed, reason); err != nil {
			return nil, err
		}
	}
	// A global 429 may arrive while the request waits for its turn: look again after pacing.
	for paced := false; ; {
		l.mu.Lock()
		d := time.Until(l.globalUntil)
		l.mu.Unlock()
		var err error
		switch {
		case d > 0:
			err = sleepCtx(ctx, d, nil, waitRetryAfter)
			paced = false
		case paced:
			return p, nil
		default:
			err = l.pace.wait(ctx)
			paced = true
		}
		if err != nil {
			p.done(nil, 0, 0)
			return nil, err
		}
	}
}

// pauseAll stops every request for d (a global 429).
func (l *limiter) pauseAll(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := time.Now().Add(d); until.After(l.globalUntil) {
		l.globalUntil = until
	}
}

// done ends the request: h is the answer's header (nil when there was none),
// block a per-bucket wait ordered by a 429.
func (p *permit) done(h http.Header, status int, block time.Duration) {
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	b := p.b
	b.inflight--
	target := b
	if h != nil {
		if hash := h.Get("X-RateLimit-Bucket"); hash != "" {
			l.routeBucket[p.route] = hash
			target = l.bucketLocked(hash + "|" + p.major)
		}
		target.learnLocked(h, status, time.Now())
	}
	if block > 0 {
		if until := time.Now().Add(block); until.After(target.blockedUntil) {
			target.blockedUntil = until
		}
	}
	b.notify()
	if target != b {
		target.notify()
	}
}

// learnLocked applies the X-RateLimit-* headers of an answer received at now.
func (b *bucket) learnLocked(h http.Header, status int, now time.Time) {
	rem, errR := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	after, errA := strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64)
	if errR != nil || errA != nil || rem < 0 || after < 0 {
		if !b.known && status >= 200 && status < 300 {
			b.known, b.limit = true, 0 // a success without headers: no per-route limit
		}
		return
	}
	limit, err := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	if err != nil || limit <= rem {
		limit = max(b.limit, rem+1)
	}
	reset := now.Add(secondsDuration(after))
	if !b.known || b.limit == 0 || reset.After(b.resetAt.Add(windowTolerance)) {
		// A new window: the other requests in flight may land in it.
		b.remaining = rem - b.inflight
		b.resetAt = reset
	} else {
		// The same window: an answer that overtook others may report too many permits.
		b.remaining = min(b.remaining, rem)
		if reset.After(b.resetAt) {
			b.resetAt = reset
		}
	}
	b.known, b.limit = true, limit
}

// sleepCtx waits for d (0: no timer), for wake to be closed (nil: never), or
// for ctx, and adds the time waited to the metric of reason ("" for none).
func sleepCtx(ctx context.Context, d time.Duration, wake <-chan struct{}, reason string) error {
	if d <= 0 && wake == nil {
		return ctx.Err()
	}
	if reason != "" {
		start := time.Now()
		defer func() { metricWait.WithLabelValues(reason).Add(time.Since(start).Seconds()) }()
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
	case <-wake:
	}
	return nil
}

func secondsDuration(s float64) time.Duration {
	const maxSeconds = float64(24 * time.Hour / time.Second)
	if s <= 0 {
		return 0
	}
	if s > maxSeconds {
		s = maxSeconds
	}
	return time.Duration(s * float64(time.Second))
}
