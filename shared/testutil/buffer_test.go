package testutil

import (
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("kept %d bytes, want 800", len(got))
	}
}
