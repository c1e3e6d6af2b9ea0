package cache

import (
	"sync"
	"time"

	"forumstats.local/stats-svc/internal/answers"
)

// l1 is the in-process level: the answers of one generation, bounded by the
// total size of their bodies. A new generation replaces the whole map; the map
// it replaces is kept as old, whose entries only serve stale copies (while the
// database is unreachable) and are the first to go when the bound is reached.
type l1 struct {
	mu       sync.RWMutex
	gen      int64
	items    map[string]l1Entry
	old      map[string]l1Entry // the previous generation's entries
	bytes    int                // of items and old together
	maxBytes int
}

type l1Entry struct {
	answer  answers.Answer
	expires time.Time
}

func newL1(maxBytes int) *l1 {
	return &l1{items: map[string]l1Entry{}, maxBytes: maxBytes}
}

func (l *l1) get(gen int64, key string, now time.Time) (answers.Answer, bool) {
	l.mu.RLock()
	e, ok := l.items[key]
	sameGen := l.gen == gen
	l.mu.RUnlock()
	if !ok || !sameGen || !now.Before(e.expires) {
		return answers.Answer{}, false
	}
	return e.answer, true
}

// stale returns the newest copy held of key, of any generation, unless it expired before
// now-window; its ValidUntil is when it stopped being served fresh.
func (l *l1) stale(key string, now time.Time, window time.Duration) (answers.Answer, bool) {
	l.mu.RLock()
	e, ok := l.items[key]
	if !ok {
		e, ok = l.old[key]
	}
	l.mu.RUnlock()
	if !ok || !now.Before(e.expires.Add(window)) {
		return answers.Answer{}, false
	}
	a := e.answer
	a.ValidUntil = e.expires
	return a, true
}

func (l *l1) put(key string, a answers.Answer, expires time.Time) {
	size := len(a.Body) + len(key)
	if size > l.maxBytes/4 {
		return // one answer may not crowd out the rest
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.Generation != l.gen {
		for k, e := range l.old {
			l.bytes -= len(e.answer.Body) + len(k)
		}
		l.gen, l.old, l.items = a.Generation, l.items, map[string]l1Entry{}
	}
	if prev, ok := l.items[key]; ok {
		l.bytes -= len(prev.answer.Body) + len(key)
	}
	if prev, ok := l.old[key]; ok { // the new copy supersedes it, stale or not
		l.bytes -= len(prev.answer.Body) + len(key)
		delete(l.old, key)
	}
	// Over budget: drop the previous generation's entries first, then
	// arbitrary ones (map order). Entries of one generation are cheap to
	// refill, so no LRU bookkeeping on the hot path.
	for _, m := range []map[string]l1Entry{l.old, l.items} {
		for k, e := range m {
			if l.bytes+size <= l.maxBytes {
				break
			}
			l.bytes -= len(e.answer.Body) + len(k)
			delete(m, k)
		}
	}
	l.items[key] = l1Entry{answer: a, expires: expires}
	l.bytes += size
}
