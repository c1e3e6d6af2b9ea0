package auth

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// ttlCache remembers lookups, found or not, for a short time. Concurrent misses of one key share
// one lookup, so a burst of requests with a new key costs one query. Found and missing entries
// are kept apart, each map bounded by max: a flood of unknown keys fills and churns only the
// missing side, and never pushes a known key out (which would cost its next request a query).
// When a side is full, its expired entries are swept, and if that frees nothing an arbitrary
// entry of that side is dropped.
type ttlCache[K comparable, V any] struct {
	ttl, negTTL time.Duration
	max         int
	now         func() time.Time

	mu      sync.RWMutex
	found   map[K]entry[V]
	missing map[K]entry[V]
	group   singleflight.Group
}

type entry[V any] struct {
	value   V
	found   bool
	expires time.Time
}

func newTTLCache[K comparable, V any](ttl, negTTL time.Duration, max int, now func() time.Time) *ttlCache[K, V] {
	return &ttlCache[K, V]{ttl: ttl, negTTL: negTTL, max: max, now: now,
		found: map[K]entry[V]{}, missing: map[K]entry[V]{}}
}

// cached returns k's entry when one is held and not expired.
func (c *ttlCache[K, V]) cached(k K) (entry[V], bool) {
	now := c.now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.found[k]; ok && now.Before(e.expires) {
		return e, true
	}
	if e, ok := c.missing[k]; ok && now.Before(e.expires) {
		return e, true
	}
	return entry[V]{}, false
}

func (c *ttlCache[K, V]) get(k K, load func() (V, bool, error)) (V, bool, error) {
	if e, ok := c.cached(k); ok {
		return e.value, e.found, nil
	}
	res, err, _ := c.group.Do(fmt.Sprint(k), func() (any, error) {
		v, found, err := load()
		if err != nil {
			return nil, err // errors are not cached: the next request asks again
		}
		e := entry[V]{value: v, found: found}
		if found {
			e.expires = c.now().Add(c.ttl)
		} else {
			e.expires = c.now().Add(c.negTTL)
		}
		c.put(k, e)
		return e, nil
	})
	if err != nil {
		var zero V
		return zero, false, err
	}
	e := res.(entry[V])
	return e.value, e.found, nil
}

func (c *ttlCache[K, V]) put(k K, e entry[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	side, other := c.found, c.missing
	if !e.found {
		side, other = c.missing, c.found
	}
	delete(other, k)
	if _, exists := side[k]; !exists && len(side) >= c.max {
		now := c.now()
		for key, old := range side {
			if !now.Before(old.expires) {
				delete(side, key)
			}
		}
		for key := range side {
			if len(side) < c.max {
				break
			}
			delete(side, key)
		}
	}
	side[k] = e
}
