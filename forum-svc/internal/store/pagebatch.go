package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"forumstats.local/forum-svc/internal/conversation"
)

// pageBatchSize shows how much pipelining happens: all ones means the database keeps up without
// it; large batches mean page requests are queueing for the database.
var pageBatchSize = promauto.NewHistogram(prometheus.HistogramOpts{
	Name:    "forum_page_query_batch_size",
	Help:    "Message-page queries sent to the database per round trip.",
	Buckets: []float64{1, 2, 4, 8, 16},
})

// pageBatcher bounds how many page queries run on the database at once and sends the queries of
// requests that arrive meanwhile together, as one pipeline (one write, one stream of results)
// instead of one round trip each. Each request still runs its own statement; only the round trips
// are shared.
//
// Why: on a busy server most of a page query's cost is not the index lookup but waking the
// database backend and the service for every round trip (system calls and scheduler work on both
// sides). Past a few concurrent queries, more parallelism only adds that overhead; a pipeline of
// queued queries runs back to back in one backend.
//
// There is no background goroutine. A request that finds a free slot runs at once with whatever is
// queued (the leader); a request that finds every slot busy queues and waits. A leader that
// finishes with calls still queued hands its slot to a goroutine that runs them. With light load
// every request leads a batch of one: the plain round trip, no handoff.
type pageBatcher struct {
	run         func(ctx context.Context, batch []*pageCall)
	maxInFlight int
	maxBatch    int

	mu       sync.Mutex
	queue    []*pageCall
	inFlight int
}

// pageCall is one request's page query and, once done is closed, its answer.
type pageCall struct {
	ctx                  context.Context
	conversationID, user int64
	page                 int64

	rows conversation.PageRows
	err  error
	done chan struct{} // nil for the leader's own call
}

// args are pageSQL's parameters for c.
func (c *pageCall) args() []any { return pageArgs(c.conversationID, c.user, c.page) }

func newPageBatcher(maxInFlight, maxBatch int, run func(ctx context.Context, batch []*pageCall)) *pageBatcher {
	return &pageBatcher{run: run, maxInFlight: max(maxInFlight, 1), maxBatch: max(maxBatch, 1)}
}

// do runs c, alone or with others, and returns its answer (or c.ctx's error if the request gives
// up while queued).
func (b *pageBatcher) do(c *pageCall) (conversation.PageRows, error) {
	b.mu.Lock()
	if b.inFlight < b.maxInFlight {
		b.inFlight++
		batch := b.take(c)
		b.mu.Unlock()
		b.lead(batch)
		return c.rows, c.err
	}
	c.done = make(chan struct{})
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.done: // the runner wrote the answer before closing done
		return c.rows, c.err
	case <-c.ctx.Done():
		// The leader that takes c skips it or answers nobody; c is not read again here.
		return conversation.PageRows{}, c.ctx.Err()
	}
}

// take returns a batch: first (if any) and the oldest queued calls, up to maxBatch. b.mu is held.
func (b *pageBatcher) take(first *pageCall) []*pageCall {
	n := min(len(b.queue), b.maxBatch)
	if first != nil {
		n = min(n, b.maxBatch-1)
	}
	batch := make([]*pageCall, 0, n+1)
	if first != nil {
		batch = append(batch, first)
	}
	batch = append(batch, b.queue[:n]...)
	clear(b.queue[:n])
	b.queue = b.queue[n:]
	if len(b.queue) == 0 {
		b.queue = b.queue[:0:0] // let the emptied backing array go
	}
	return batch
}

// lead runs batch in the slot it holds, then either frees the slot or passes it, with the calls
// queued meanwhile, to a new goroutine, so that the leader's own request is answered now.
func (b *pageBatcher) lead(batch []*pageCall) {
	b.execute(batch)
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.inFlight--
		b.mu.Unlock()
		return
	}
	next := b.take(nil)
	b.mu.Unlock()
	go b.lead(next)
}

// execute runs the calls whose requests still wait, under a context that ends only when all of
// them have given up, and wakes the waiting ones. A panic in run becomes the calls' error: the slot
// must be released and the waiters woken whatever happens (lead may run on a goroutine of its own,
// where a panic would end the process).
func (b *pageBatcher) execute(batch []*pageCall) {
	defer func() {
		p := recover()
		for _, c := range batch {
			if p != nil {
				c.rows, c.err = conversation.PageRows{}, fmt.Errorf("read message page: panic: %v", p)
			}
			if c.done != nil {
				close(c.done)
			}
		}
	}()
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	pageBatchSize.Observe(float64(len(live)))
	ctx, stop := batchContext(live)
	defer stop()
	b.run(ctx, live)
}

// batchContext is canceled when every call's context is done (for a single call, it is that
// call's context).
func batchContext(calls []*pageCall) (context.Context, func()) {
	if len(calls) == 1 {
		return calls[0].ctx, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var waiting atomic.Int64
	waiting.Store(int64(len(calls)))
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
