package discord

import (
	"math"
	"time"
)

// pacerTolerance is how late a request may leave without the pacer losing
// the time: a few scheduler delays on a busy machine.
const pacerTolerance = 50 * time.Millisecond

// pacer keeps requests under rate per second with two rules:
//   - a schedule one interval (1/rate) per request; a request that leaves
//     late by up to tolerance does not shift it (so ordinary lateness costs no
//     throughput), a later one restarts it from the late send (so a stall does
//     not turn into a burst of all the missed send times);
//   - a sliding window: at most n = ⌊rate⌋ requests in any n/rate seconds
//     (50 in any second at 50/s), whatever the lateness did to the schedule.
//
// Unlike a token bucket, which hands out send times in advance, it records a
// request when it really leaves.
type pacer struct {
	interval  time.Duration
	tolerance time.Duration
	window    time.Duration

	// guarded by the limiter's mutex
	next   time.Time   // by the schedule
	sent   []time.Time // the last n departures, a ring
	oldest int         // index of the oldest departure in sent
}

func newPacer(perSecond float64) *pacer {
	n := max(1, int(math.Floor(perSecond)))
	interval := time.Duration(float64(time.Second) / perSecond)
	return &pacer{
		interval:  interval,
		tolerance: max(interval, pacerTolerance),
		window:    time.Duration(float64(n) / perSecond * float64(time.Second)),
		sent:      make([]time.Time, n),
	}
}

// earliest is when the next request may leave.
func (p *pacer) earliest() time.Time {
	at := p.next
	if o := p.sent[p.oldest]; !o.IsZero() && o.Add(p.window).After(at) {
		at = o.Add(p.window)
	}
	return at
}

// left records that a request left at now.
func (p *pacer) left(now time.Time) {
	p.sent[p.oldest] = now
	p.oldest = (p.oldest + 1) % len(p.sent)
	if p.next.IsZero() {
		p.next = now
	}
	p.next = p.next.Add(p.interval)
	if floor := now.Add(p.interval - p.tolerance); p.next.Before(floor) {
		p.next = floor
	}
}
