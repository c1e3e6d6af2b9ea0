package httpapi

import "sync"

// csvMemo keeps rendered CSVs by their entity tag. The tag names the JSON body the CSV was
// rendered from (and the layout), so an entry never goes out of date: the same tag is the same
// bytes for ever, and a new answer simply has a new tag. It spares the rendering of a large
// answer (about 30 ms of CPU for a year of 100 servers) on every request, which would make a
// cached CSV far dearer than the cached JSON it comes from. Bounded by the bytes held; over the
// bound, arbitrary entries go (map order), as in the answers' L1.
type csvMemo struct {
	mu       sync.Mutex
	items    map[string]csvEntry
	bytes    int
	maxBytes int
}

type csvEntry struct {
	filename string
	body     []byte
}

func newCSVMemo(maxBytes int) *csvMemo {
	return &csvMemo{items: map[string]csvEntry{}, maxBytes: maxBytes}
}

func (m *csvMemo) get(tag string) (csvEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[tag]
	return e, ok
}

func (m *csvMemo) put(tag string, e csvEntry) {
	size := len(tag) + len(e.filename) + len(e.body)
	if size > m.maxBytes/4 {
		return // one export may not crowd out the rest
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
		m.bytes -= len(k) + len(old.filename) + len(old.body)
		delete(m.items, k)
	}
	m.items[tag] = e
	m.bytes += size
}
