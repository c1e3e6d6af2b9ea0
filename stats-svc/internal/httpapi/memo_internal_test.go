package httpapi

import (
	"fmt"
	"testing"
)

// The memo keeps what fits its bound, drops entries to make room, refuses one over a quarter of
// it, and counts its bytes exactly.
func TestCSVMemoBound(t *testing.T) {
	m := newCSVMemo(1000)
	m.put("a", csvEntry{filename: "a.csv", body: []byte("x")})
	if e, ok := m.get("a"); !ok || e.filename != "a.csv" || string(e.body) != "x" {
		t.Fatalf("get: %+v %v", e, ok)
	}
	if _, ok := m.get("b"); ok {
		t.Fatal("a tag never put was found")
	}
	for i := range 100 {
		m.put(fmt.Sprint("t", i), csvEntry{filename: "f", body: make([]byte, 90)})
		if m.bytes > 1000 {
			t.Fatalf("memo holds %d bytes", m.bytes)
		}
	}
	total := 0
	for k, e := range m.items {
		total += len(k) + len(e.filename) + len(e.body)
	}
	if total != m.bytes || len(m.items) == 0 {
		t.Fatalf("bytes %d, entries hold %d (%d entries)", m.bytes, total, len(m.items))
	}
	m.put("huge", csvEntry{body: make([]byte, 300)})
	if _, ok := m.get("huge"); ok {
		t.Fatal("an export over a quarter of the bound was kept")
	}
}

// The gzip memo counts the compressed bytes and its tags against the same kind of bound.
func TestGzipMemoBound(t *testing.T) {
	m := newGzipMemo(100)
	m.put(`"a-gzip"`, []byte("0123456789"))
	if b, ok := m.get(`"a-gzip"`); !ok || string(b) != "0123456789" {
		t.Fatalf("get: %q %v", b, ok)
	}
	if m.bytes != len(`"a-gzip"`)+10 {
		t.Fatalf("bytes %d", m.bytes)
	}
	m.put(`"b-gzip"`, make([]byte, 30))
	if _, ok := m.get(`"b-gzip"`); ok {
		t.Fatal("a body over a quarter of the bound was kept")
	}
}
