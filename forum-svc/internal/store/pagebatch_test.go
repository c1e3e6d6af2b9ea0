package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/conversation"
)

// fakeRunner answers a call with Total = its page, records the batches, and can hold every batch
// until released.
type fakeRunner struct {
	mu      sync.Mutex
	batches [][]int64 // pages, per batch, in run order
	running int
	peak    int
	hold    chan struct{} // nil: do not hold
	started chan struct{} // receives once per batch started, if not nil
}

func (f *fakeRunner) run(ctx context.Context, calls []*pageCall) {
	f.mu.Lock()
	f.running++
	f.peak = max(f.peak, f.running)
	var pages []int64
	for _, c := range calls {
		pages = append(pages, c.page)
	}
	f.batches = append(f.batches, pages)
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.hold != nil {
		<-f.hold
	}
	for _, c := range calls {
		c.rows, c.err = conversation.PageRows{Total: c.page}, nil
	}
	f.mu.Lock()
	f.running--
	f.mu.Unlock()
}

func call(ctx context.Context, page int64) *pageCall {
	return &pageCall{ctx: ctx, conversationID: 1, user: 1, page: page}
}

func TestPageBatcherRunsAloneWhenIdle(t *testing.T) {
	f := &fakeRunner{}
	b := newPageBatcher(2, 16, f.run)
	for page := int64(1); page <= 5; page++ {
		rows, err := b.do(call(context.Background(), page))
		if err != nil || rows.Total != page {
			t.Fatalf("page %d: %+v, %v", page, rows, err)
		}
	}
	if want := [][]int64{{1}, {2}, {3}, {4}, {5}}; !slices.EqualFunc(f.batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", f.batches, want)
	}
}

func TestPageBatcherBoundsConcurrencyAndPipelinesTheQueue(t *testing.T) {
	f := &fakeRunner{hold: make(chan struct{}), started: make(chan struct{}, 100)}
	b := newPageBatcher(2, 3, f.run)
	results := make(chan error, 20)
	ask := func(page int64) {
		rows, err := b.do(call(context.Background(), page))
		if err == nil && rows.Total != page {
			err = errors.New("wrong answer")
		}
		results <- err
	}
	// Two leaders take both slots and are held.
	go ask(1)
	<-f.started
	go ask(2)
	<-f.started
	// Seven more queue, in order.
	for page := int64(3); page <= 9; page++ {
		go ask(page)
		waitQueued(t, b, int(page-2))
	}
	close(f.hold)
	for range 9 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if f.peak > 2 {
		t.Fatalf("%d batches ran at once, limit 2", f.peak)
	}
	// The queued calls are taken oldest first, three at a time (the batches may start in any order).
	var queued [][]int64
	for _, batch := range f.batches {
		if batch[0] > 2 {
			queued = append(queued, batch)
		}
	}
	slices.SortFunc(queued, func(a, b []int64) int { return int(a[0] - b[0]) })
	if want := [][]int64{{3, 4, 5}, {6, 7, 8}, {9}}; len(f.batches) != 5 || !slices.EqualFunc(queued, want, slices.Equal) {
		t.Fatalf("batches %v, want {1}, {2} and then %v", f.batches, want)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight != 0 || len(b.queue) != 0 {
		t.Fatalf("after the run: %d in flight, %d queued", b.inFlight, len(b.queue))
	}
}

func TestPageBatcherQueuedCallGivesUp(t *testing.T) {
	f := &fakeRunner{hold: make(chan struct{}), started: make(chan struct{}, 10)}
	b := newPageBatcher(1, 16, f.run)
	done := make(chan error, 2)
	go func() { _, err := b.do(call(context.Background(), 1)); done <- err }()
	<-f.started
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, err := b.do(call(ctx, 2)); done <- err }()
	waitQueued(t, b, 1)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("queued call returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a canceled queued call did not return")
	}
	close(f.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The canceled call is never run.
	waitIdle(t, b)
	if want := [][]int64{{1}}; !slices.EqualFunc(f.batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", f.batches, want)
	}
}

func TestPageBatcherManyCallers(t *testing.T) {
	f := &fakeRunner{}
	b := newPageBatcher(3, 4, f.run)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func(page int64) {
			defer wg.Done()
			rows, err := b.do(call(context.Background(), page))
			if err != nil || rows.Total != page {
				t.Errorf("page %d: %+v, %v", page, rows, err)
			}
		}(int64(i + 1))
	}
	wg.Wait()
	waitIdle(t, b)
	if f.peak > 3 {
		t.Fatalf("%d batches at once, limit 3", f.peak)
	}
	n := 0
	for _, batch := range f.batches {
		n += len(batch)
	}
	if n != 200 {
		t.Fatalf("%d calls run, want 200 (each once)", n)
	}
}

func TestBatchContext(t *testing.T) {
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	ctx, stop := batchContext([]*pageCall{call(ctx1, 1), call(ctx2, 2)})
	defer stop()
	cancel1()
	select {
	case <-ctx.Done():
		t.Fatal("the batch was canceled while a caller still waits")
	case <-time.After(20 * time.Millisecond):
	}
	cancel2()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the batch was not canceled when every caller gave up")
	}
}

func waitQueued(t *testing.T, b *pageBatcher, n int) {
	t.Helper()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == n })
}

func waitIdle(t *testing.T, b *pageBatcher) {
	t.Helper()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.inFlight == 0 && len(b.queue) == 0 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPageBatcherSurvivesAPanickingRun(t *testing.T) {
	calls := 0
	b := newPageBatcher(1, 16, func(ctx context.Context, batch []*pageCall) {
		calls++
		if calls == 1 {
			panic("bug")
		}
		for _, c := range batch {
			c.rows = conversation.PageRows{Total: c.page}
		}
	})
	if _, err := b.do(call(context.Background(), 1)); err == nil {
		t.Fatal("a panicking run answered without an error")
	}
	// The slot was released: the next call runs.
	if rows, err := b.do(call(context.Background(), 2)); err != nil || rows.Total != 2 {
		t.Fatalf("after a panic: %+v, %v", rows, err)
	}
}
