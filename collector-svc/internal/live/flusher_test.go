package live

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"
)

// memWriter keeps the batches it is given, in order.
type memWriter struct {
	mu      sync.Mutex
	batches []Batch
}

func (m *memWriter) Flush(_ context.Context, b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.batches); n > 0 && m.batches[n-1].Next != b.Prev {
		return ErrCheckpointMoved
	}
	m.batches = append(m.batches, b)
	return nil
}

func (m *memWriter) counts() (map[Key]int64, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Key]int64{}
	for _, b := range m.batches {
		add(out, b.Counts)
	}
	return nonZero(out), len(m.batches)
}

// Run flushes on its ticker while events keep coming, and once more when stopped: every event
// applied before the stop is written.
func TestRunFlushesOnItsTickerAndWhenStopped(t *testing.T) {
	w := &memWriter{}
	f := NewFlusher(NewAccumulator(0, 1, State{}), w, func() time.Time { return t0.Add(-time.Hour) }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx, 5*time.Millisecond); close(done) }()
	evs := stream(guild, 120)
	for _, ev := range evs[:60] {
		f.Apply(ev)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, n := w.counts(); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no flush in 5 s")
		}
	}
	for _, ev := range evs[60:] {
		f.Apply(ev)
	}
	cancel()
	<-done
	if got, want := func() map[Key]int64 { c, _ := w.counts(); return c }(), expected(t, evs); !maps.Equal(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
	if cp := f.Checkpoint(); cp.Seq != evs[len(evs)-1].Seq {
		t.Errorf("checkpoint seq %d, want %d", cp.Seq, evs[len(evs)-1].Seq)
	}
}
