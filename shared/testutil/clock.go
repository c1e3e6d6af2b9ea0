package testutil

import (
	"sync"
	"time"
)

// Clock is a settable clock for tests of time-dependent code; its Now can be passed wherever a
// func() time.Time is injected. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Busiest is the most of times (in the order they happened) that fall within any one span of
// length window: what a rate limit of that window sees at its worst.
func Busiest(times []time.Time, window time.Duration) int {
	most, j := 0, 0
	for i, t := range times {
		for t.Sub(times[j]) >= window {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}
