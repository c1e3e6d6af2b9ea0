package discord

import (
	"cmp"
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

// limiter schedules requests: per Discord bucket (X-RateLimit-*), a global pause after a global
// 429, and a global requests-per-second cap. Waiting requests queue by lane (route and major
// parameter); whenever the cap allows a departure, the oldest waiting request whose bucket has a
// permit now leaves, so that requests of every guild of a pass interleave and the cap, not a
// guild's bucket or the answers' latency, bounds the pass. Nothing runs between events: a
// departure is decided when a request arrives, an answer comes back, or a timer armed for the
// next moment something can leave fires (so a virtual clock, testing/synctest, drives it whole).
//
// A grant is not yet a departure: the granted request's goroutine runs later, on a busy machine
// much later, and meanwhile answers may empty its bucket, a 429 may block it, or the route's
// bucket may be learned. So the request checks its bucket, the global pause and the cap again
// when it really leaves (depart), and waits there rather than reach Discord into a window known
// to be spent: every 429 counts toward Discord's invalid-request limit.
type limiter struct {
	mu          sync.Mutex
	pace        *pacer             // the global cap over the grants; earliest/left only, under mu
	sent        *pacer             // the global cap again, over the requests as they really leave
	routeBucket map[string]string  // route template → X-RateLimit-Bucket learned from answers
	buckets     map[string]*bucket // bucket hash (or route, before it is learned) + major parameter
	lanes       map[string]*lane   // waiting requests by route and major parameter
	globalUntil time.Time
	seq         uint64
	timer       *time.Timer // armed for timerAt, when requests wait for a time to come
	timerAt     time.Time
	armed       bool
	changed     chan struct{} // closed (and dropped) when an answer comes; made by a departure waiting for one

	// granted, when set, runs on a request's goroutine between its grant and its departure: tests
	// delay it there to play a busy machine that runs the goroutine late.
	granted func(route, major string)
}

// bucket is what is known of one Discord rate-limit bucket for one guild.
type bucket struct {
	known        bool      // an answer told the limits, or that there are none (limit 0)
	limit        int       // X-RateLimit-Limit; 0 = none announced
	remaining    int       // permits left in the window, requests in flight counted as spent
	resetAt      time.Time // end of the window on our clock; never earlier than Discord's
	blockedUntil time.Time // after a 429 on this bucket
	inflight     int       // granted and not yet answered, unsent ones included
	unsent       int       // granted and not yet left: Discord has certainly not counted them
}

// lane is the queue of the requests waiting on one route for one guild, oldest first.
type lane struct {
	key, route, major string
	waiting           []*ticket
}

// ticket is one waiting request; ready is closed when it is granted p. reason is what last held
// it at the head of its lane (its bucket, a 429), "" when only the global cap did.
type ticket struct {
	seq    uint64
	ready  chan struct{}
	p      *permit
	reason string
}

func newLimiter(perSecond float64) *limiter {
	return &limiter{
		pace:        newPacer(perSecond),
		sent:        newPacer(perSecond),
		routeBucket: map[string]string{},
		buckets:     map[string]*bucket{},
		lanes:       map[string]*lane{},
	}
}

func (l *limiter) bucketLocked(key string) *bucket {
	b := l.buckets[key]
	if b == nil {
		b = &bucket{}
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
// may not, it returns how long to wait (0: until an answer changes the state) and why.
func (b *bucket) admitLocked(now time.Time) (ok bool, wait time.Duration, reason string) {
	switch {
	case now.Before(b.blockedUntil):
		return false, b.blockedUntil.Sub(now), waitRetryAfter
	case !b.known:
		// One request discovers the limits; the others wait for its answer.
		return b.inflight == 0, 0, waitBucket
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

// departLocked decides whether one of b's granted, unsent requests may leave now. remaining
// counts every request in flight as spent, so remaining+unsent is what the window has left for
// the unsent ones; when that is nothing, they wait for the window's end (or, when the requests
// already sent fill the next window too, for an answer: wait 0). Until b is known, one request
// at a time discovers it.
func (b *bucket) departLocked(now time.Time) (ok bool, wait time.Duration, reason string) {
	switch {
	case now.Before(b.blockedUntil):
		return false, b.blockedUntil.Sub(now), waitRetryAfter
	case !b.known:
		return b.inflight == b.unsent, 0, waitBucket
	case b.limit > 0 && b.remaining+b.unsent <= 0:
		if now.Before(b.resetAt) {
			return false, b.resetAt.Sub(now), waitBucket
		}
		b.remaining = b.limit - b.inflight
		if b.remaining+b.unsent <= 0 {
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
	left  bool // it departed: b no longer counts it unsent
}

// acquire waits until a request on route for the guild major is sent: its bucket has a permit,
// no global pause is running, the global cap allows it, and no older request that could leave
// is waiting.
func (l *limiter) acquire(ctx context.Context, route, major string) (*permit, error) {
	start := time.Now()
	l.mu.Lock()
	key := route + "|" + major
	ln := l.lanes[key]
	if ln == nil {
		ln = &lane{key: key, route: route, major: major}
		l.lanes[key] = ln
	}
	l.seq++
	t := &ticket{seq: l.seq, ready: make(chan struct{})}
	ln.waiting = append(ln.waiting, t)
	l.dispatchLocked(start)
	l.mu.Unlock()
	select {
	case <-t.ready:
		if l.granted != nil {
			l.granted(route, major)
		}
		reason, err := l.depart(ctx, t.p)
		metricWait.WithLabelValues(cmp.Or(reason, t.reason, waitPacing)).Add(time.Since(start).Seconds())
		if err != nil {
			t.p.done(nil, 0, 0)
			return nil, err
		}
		return t.p, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if t.p == nil {
		ln.remove(t)
		if len(ln.waiting) == 0 && l.lanes[key] == ln {
			delete(l.lanes, key)
		}
		l.mu.Unlock()
		return nil, ctx.Err()
	}
	l.mu.Unlock()
	t.p.done(nil, 0, 0) // granted meanwhile: give the permit back
	return nil, ctx.Err()
}

// depart holds the granted request p until, at the moment it really leaves, its bucket still has
// a permit for it, no global pause runs and the cap allows it: on a busy machine the goroutines
// of requests granted one interval apart may only run later, together, and must not reach
// Discord as a burst, nor into a bucket that answers emptied or a 429 blocked meanwhile. It
// returns what held the request here last ("" for the cap or nothing).
func (l *limiter) depart(ctx context.Context, p *permit) (reason string, err error) {
	for {
		l.mu.Lock()
		now := time.Now()
		var (
			ok   bool
			wait time.Duration
			why  string
		)
		if now.Before(l.globalUntil) {
			wait, why = l.globalUntil.Sub(now), waitRetryAfter
		} else {
			l.rebucketLocked(p)
			ok, wait, why = p.b.departLocked(now)
		}
		if ok {
			if at := l.sent.earliest(); now.Before(at) {
				ok, wait, why = false, at.Sub(now), ""
			}
		}
		if ok {
			p.b.unsent--
			p.left = true
			l.sent.left(now)
			l.mu.Unlock()
			return reason, nil
		}
		reason = cmp.Or(why, reason)
		var wake <-chan struct{}
		if wait == 0 {
			if l.changed == nil {
				l.changed = make(chan struct{})
			}
			wake = l.changed
		}
		l.mu.Unlock()
		if err := sleepCtx(ctx, wait, wake, ""); err != nil {
			return reason, err
		}
	}
}

// rebucketLocked moves the unsent p to the bucket its route goes through now, when an answer
// named the route's bucket after p was granted: the permit counted in the route's provisional
// bucket is no permit of the real one, which the requests granted since have been spending.
// There p counts as granted (in flight, a permit spent), so that departLocked decides it alike.
func (l *limiter) rebucketLocked(p *permit) {
	cur := l.bucketForLocked(p.route, p.major)
	if cur == p.b {
		return
	}
	p.b.inflight--
	p.b.unsent--
	cur.inflight++
	cur.unsent++
	if cur.limit > 0 {
		cur.remaining--
	}
	p.b = cur
}

func (ln *lane) remove(t *ticket) {
	for i, w := range ln.waiting {
		if w == t {
			ln.waiting = append(ln.waiting[:i], ln.waiting[i+1:]...)
			return
		}
	}
}

// dispatchLocked lets every request that may leave at now leave, oldest first, and arms the timer
// for the next moment one may.
func (l *limiter) dispatchLocked(now time.Time) {
	for len(l.lanes) > 0 {
		if now.Before(l.globalUntil) {
			l.armLocked(now, l.globalUntil)
			return
		}
		if e := l.pace.earliest(); now.Before(e) {
			l.armLocked(now, e)
			return
		}
		var (
			best  *lane
			bestB *bucket
			retry time.Time
		)
		for _, ln := range l.lanes {
			if best != nil && ln.waiting[0].seq > best.waiting[0].seq {
				continue
			}
			b := l.bucketForLocked(ln.route, ln.major)
			ok, wait, reason := b.admitLocked(now)
			if !ok {
				ln.waiting[0].reason = reason
				if at := now.Add(wait); wait > 0 && (retry.IsZero() || at.Before(retry)) {
					retry = at
				}
				continue
			}
			best, bestB = ln, b
		}
		if best == nil {
			// Answers in flight wake the others up (done); a bucket window or block ends by time.
			if !retry.IsZero() {
				l.armLocked(now, retry)
			}
			return
		}
		t := best.waiting[0]
		best.waiting = best.waiting[1:]
		if len(best.waiting) == 0 {
			delete(l.lanes, best.key)
		}
		bestB.inflight++
		bestB.unsent++
		if bestB.limit > 0 {
			bestB.remaining--
		}
		l.pace.left(now)
		t.p = &permit{l: l, b: bestB, route: best.route, major: best.major}
		close(t.ready)
	}
}

// armLocked makes sure a dispatch runs at at (or earlier). One timer serves the limiter, reset
// rather than replaced.
func (l *limiter) armLocked(now, at time.Time) {
	if l.armed && !l.timerAt.After(at) && l.timerAt.After(now) {
		return
	}
	l.timerAt, l.armed = at, true
	if l.timer == nil {
		l.timer = time.AfterFunc(at.Sub(now), l.fire)
		return
	}
	l.timer.Reset(at.Sub(now))
}

func (l *limiter) fire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	l.dispatchLocked(time.Now())
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
	now := time.Now()
	b := p.b
	b.inflight--
	if !p.left {
		b.unsent--
	}
	target := b
	if h != nil {
		if hash := h.Get("X-RateLimit-Bucket"); hash != "" {
			l.routeBucket[p.route] = hash
			target = l.bucketLocked(hash + "|" + p.major)
		}
		target.learnLocked(h, status, now)
	}
	if block > 0 {
		if until := now.Add(block); until.After(target.blockedUntil) {
			target.blockedUntil = until
		}
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.dispatchLocked(now)
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
		// The same window: an answer that overtook others may report too many permits, and
		// Discord has not counted the requests granted here that have not left yet.
		b.remaining = min(b.remaining, rem-b.unsent)
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
