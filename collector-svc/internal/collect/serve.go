package collect

import (
	"context"
	"time"

	"forumstats.local/collector-svc/internal/lock"
)

// Serve runs a pass every interval, counted from the end of one pass to the start of the next,
// while this process holds lk; without it, it waits as a standby. It returns when ctx ends.
func (c *Collector) Serve(ctx context.Context, lk *lock.Lock, interval time.Duration) error {
	for {
		if err := lk.Acquire(ctx); err != nil {
			return nil // ctx ended
		}
		metricLeader.Set(1)
		err := c.lead(ctx, lk, interval)
		metricLeader.Set(0)
		lk.Release()
		if ctx.Err() != nil {
			return nil
		}
		c.log.Error("stopped collecting: the writer lock was lost; waiting as standby", "err", err)
	}
}

// lead collects while the lock holds. A new holder keeps the schedule of the previous one:
// its first pass comes one interval after the last recorded pass ended.
func (c *Collector) lead(ctx context.Context, lk *lock.Lock, interval time.Duration) error {
	if err := c.SyncCatalogFile(ctx); err != nil {
		c.log.Error("cannot write the catalog file to the database", "err", err)
	}
	next := time.Now()
	if st, err := c.cfg.Store.State(ctx); err != nil {
		c.log.Warn("cannot read the last pass time; collecting now", "err", err)
	} else if st.PassFinishedAt != nil {
		next = st.PassFinishedAt.Add(interval)
		// A clock far ahead on the previous holder must not stall this one.
		if limit := time.Now().Add(interval); next.After(limit) {
			next = limit
		}
	}
	for {
		if wait := time.Until(next); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if err := lk.Check(ctx); err != nil {
			return err
		}
		if _, err := c.Pass(ctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		next = time.Now().Add(interval)
	}
}
