package live

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"
)

// memWriter keeps the batches it is given, in order.
type memWriter struct {
	mu      sync.Mutex
	fail    bool
	batches []Batch
}

func (m *memWriter) Flush(_ context.Context, b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("injected failure")
	}
	if n := len(m.batches); n > 0 && (m.batches[n-1].Next.SessionID != b.Prev.SessionID ||
		!b.NewSession && m.batches[n-1].Next.Seq != b.Prev.Seq) {
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

// Two sessions lost in a row while the store fails: the gaps written cover every moment counts
// were not stored, once, and the counts of the lost sessions are not written.
func TestSessionsLostWhileTheStoreFails(t *testing.T) {
	w := &memWriter{}
	now := t0.Add(-time.Hour)
	f := NewFlusher(NewAccumulator(0, 1, State{}), w, func() time.Time { return now }, nil)
	f.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s1"})
	f.Apply(Event{Seq: 2, Type: TypeGuildCreate, GuildID: guild})
	now = t0
	f.Apply(create(3, general, msg(-time.Second, 0)))
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(time.Second)
	f.Apply(create(4, general, msg(time.Second, 0)))
	now = t0.Add(time.Minute)
	f.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s2"})
	f.Apply(Event{Seq: 2, Type: TypeGuildCreate, GuildID: guild})
	now = t0.Add(65 * time.Second)
	f.Apply(create(3, general, msg(65*time.Second, 0)))
	w.fail = true
	if err := f.Flush(ctx); err == nil {
		t.Fatal("the flush did not fail")
	}
	now = t0.Add(70 * time.Second)
	f.Apply(create(4, general, msg(70*time.Second, 0)))
	now = t0.Add(2 * time.Minute)
	f.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s3"})
	w.fail = false
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	counts, n := w.counts()
	if want := (map[Key]int64{total(h10 - 1): 1, chKey(h10-1, general): 1}); !maps.Equal(counts, want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
	var gaps []Gap
	for _, b := range w.batches {
		gaps = append(gaps, b.Gaps[guild]...)
	}
	first, _ := GapBetween(t0, t0.Add(time.Minute))
	second, _ := GapBetween(t0.Add(time.Minute), t0.Add(2*time.Minute))
	if len(gaps) != 2 || gaps[0] != first || gaps[1] != second || n != 3 {
		t.Errorf("%d batches, gaps %v, want %v and %v", n, gaps, first, second)
	}
	if last := w.batches[n-1].Next; last.SessionID != "s3" || last.Seq != 1 {
		t.Errorf("checkpoint %+v, want s3 seq 1", last)
	}
}
