package cache

import (
	"sync"
	"time"

	"forumstats.local/stats-svc/internal/answers"
)

// l1 is the in-process level: the answers of one generation, bounded by the
// total size of their bodies. A new generation replaces the whole map.
type l1 struct {
	mu       sync.RWMutex
	gen      int64
	items    map[string]l1Entry
	bytes    int
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

func (l *l1) put(key string, a answers.Answer, expires time.Time) {
	size := len(a.Body) + len(key)
	if size > l.maxBytes/4 {
		return // one answer may not crowd out the rest
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.Generation != l.gen {
		l.gen, l.items, l.bytes = a.Generation, map[string]l1Entry{}, 0
	}
	if old, ok := l.items[key]; ok {
		l.bytes -= len(old.answer.Body) + len(key)
	}
	// Over budget: drop arbitrary entries (map order). Entries of one
	// generation are cheap to refill, so no LRU bookkeeping on the hot path.
	for k, e := range l.items {
		if l.bytes+size <= l.maxBytes {
			break
		}
		l.bytes -= len(e.answer.Body) + len(k)
		delete(l.items, k)
	}
	l.items[key] = l1Entry{answer: a, expires: expires}
	l.bytes += size
}
