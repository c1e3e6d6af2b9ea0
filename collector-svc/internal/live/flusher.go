package live

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultFlushInterval is LIVE_FLUSH_INTERVAL's default: how often a shard's counts are flushed.
const DefaultFlushInterval = 5 * time.Second

// Writer stores batches: Store in production.
type Writer interface {
	Flush(ctx context.Context, b Batch) error
}

// Flusher feeds one shard's events to an Accumulator and flushes its batches: Apply may be called
// from the gateway's goroutine while Run flushes.
type Flusher struct {
	flushing sync.Mutex // one Flush at a time: batches are written in the order taken
	mu       sync.Mutex
	acc      *Accumulator
	w        Writer
	now      func() time.Time
	log      *slog.Logger
	// pending is a batch whose flush failed: it is written again, alone and first, so that a
	// flush that committed but was answered with an error is recognised by its checkpoint.
	pending *Batch
}

// NewFlusher returns a Flusher of acc's batches into w; now is the clock (nil: time.Now).
func NewFlusher(acc *Accumulator, w Writer, now func() time.Time, log *slog.Logger) *Flusher {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Flusher{acc: acc, w: w, now: now, log: log}
}

// Apply applies ev as received now.
func (f *Flusher) Apply(ev Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acc.Apply(ev, f.now())
}

// Checkpoint is where the gateway resumes the shard's session from.
func (f *Flusher) Checkpoint() Checkpoint {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acc.Checkpoint()
}

// Fill adds a search's counts of a gap of guild (see Accumulator.Fill) to the next flush.
func (f *Flusher) Fill(guild uint64, gap Gap, counts map[Key]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acc.Fill(guild, gap, counts)
}

// SetCutoff sets the oldest time whose deletions still count (see Accumulator.SetCutoff).
func (f *Flusher) SetCutoff(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acc.SetCutoff(t)
}

// Flush writes the failed batch, if any, then what was applied since the last flush, each with
// its checkpoint in one transaction. On an error the batch is kept for the next Flush: nothing is
// lost and, the checkpoint moving only with the counts, nothing is counted twice.
func (f *Flusher) Flush(ctx context.Context) error {
	f.flushing.Lock()
	defer f.flushing.Unlock()
	if err := f.flushPending(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	b := f.acc.Take(f.now())
	f.mu.Unlock()
	return f.write(ctx, b)
}

func (f *Flusher) flushPending(ctx context.Context) error {
	f.mu.Lock()
	p := f.pending
	if p != nil && f.acc.NewSession() {
		// Its session could not resume, and the gap since the last stored flush owns its
		// messages: only what it learned besides counts is still true, and, storing no counts, it
		// does not move the time counts are complete through.
		p.Counts = nil
		p.Next.FlushedAt = p.Prev.FlushedAt
	}
	f.pending = nil
	f.mu.Unlock()
	if p == nil {
		return nil
	}
	return f.write(ctx, *p)
}

func (f *Flusher) write(ctx context.Context, b Batch) error {
	err := f.w.Flush(ctx, b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.pending = &b
		return err
	}
	f.acc.Committed(b)
	return nil
}

// Run flushes every interval until ctx ends, then once more (with a short deadline of its own) so
// that a clean stop loses nothing. Failed flushes are logged and retried at the next tick.
func (f *Flusher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), interval)
			defer cancel()
			if err := f.Flush(stop); err != nil {
				f.log.Warn("live counts: last flush failed", "err", err)
			}
			return
		case <-t.C:
			if err := f.Flush(ctx); err != nil {
				f.log.Warn("live counts: flush failed, kept for the next", "err", err)
			}
		}
	}
}
