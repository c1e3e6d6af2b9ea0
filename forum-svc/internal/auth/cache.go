package auth

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// ttlCache remembers lookups, found or not, for a short time. Concurrent misses of one key share
// one lookup, so a burst of requests with a new key costs one query. The map is bounded: when it
// is full, expired entries are swept, and if that frees nothing an arbitrary entry is dropped.
type ttlCache[K comparable, V any] struct {
	ttl, negTTL time.Duration
	max         int
	now         func() time.Time

	mu      sync.RWMutex
	entries map[K]entry[V]
	group   singleflight.Group
}

type entry[V any] struct {
	value   V
	found   bool
	expires time.Time
}

func newTTLCache[K comparable, V any](ttl, negTTL time.Duration, max int, now func() time.Time) *ttlCache[K, V] {
	return &ttlCache[K, V]{ttl: ttl, negTTL: negTTL, max: max, now: now, entries: map[K]entry[V]{}}
}

func (c *ttlCache[K, V]) get(k K, load func() (V, bool, error)) (V, bool, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
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
	e = res.(entry[V])
	return e.value, e.found, nil
}

func (c *ttlCache[K, V]) put(k K, e entry[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, exists := c.entries[k]; !exists && len(c.entries) >= c.max {
		now := c.now()
		for key, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, key)
			}
		}
		for key := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = e
}
