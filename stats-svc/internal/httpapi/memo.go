package httpapi

import "sync"

// memo keeps what the service derives from an answer (its CSV, its gzip bytes) by the entity tag
// of the derived representation. The tag names the body it derives from (and the layout), so an
// entry never goes out of date: the same tag is the same bytes for ever, and a new answer simply
// has a new tag. It spares the derivation (about 30 ms of CPU to render a year of 100 servers as
// CSV, a few ms to compress a large answer) on every request, which would make a cached answer
// far dearer to send than to find. Bounded by the bytes held; over the bound, arbitrary entries
// go (map order), as in the answers' L1.
type memo[V any] struct {
	mu       sync.Mutex
	items    map[string]V
	size     func(V) int
	bytes    int
	maxBytes int
}

func newMemo[V any](maxBytes int, size func(V) int) *memo[V] {
	return &memo[V]{items: map[string]V{}, size: size, maxBytes: maxBytes}
}

type csvEntry struct {
	filename string
	body     []byte
}

func newCSVMemo(maxBytes int) *memo[csvEntry] {
	return newMemo(maxBytes, func(e csvEntry) int { return len(e.filename) + len(e.body) })
}

func newGzipMemo(maxBytes int) *memo[[]byte] {
	return newMemo(maxBytes, func(b []byte) int { return len(b) })
}

func (m *memo[V]) get(tag string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[tag]
	return e, ok
}

func (m *memo[V]) put(tag string, e V) {
	size := len(tag) + m.size(e)
	if size > m.maxBytes/4 {
		return // one entry may not crowd out the rest
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[tag]; ok {
		return
	}
	for k, old := range m.items {
		if m.bytes+size <= m.maxBytes {
			break
		}
		m.bytes -= len(k) + m.size(old)
		delete(m.items, k)
	}
	m.items[tag] = e
	m.bytes += size
}
