package testutil

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use that keeps everything written: the output of a
// process or the log of a server under concurrent requests.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
