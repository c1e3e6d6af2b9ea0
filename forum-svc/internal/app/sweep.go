package app

import (
	"context"
	"sync"
	"time"

	"forumstats.local/forum-svc/internal/store"
)

// retrySweeper deletes the expired Idempotency-Key answers, and the attachment keys past their
// lifetime with the files never attached: a *store.Store on the primary.
type retrySweeper interface {
	SweepRetries(ctx context.Context, now int64, batch int) (int64, error)
	SweepAttachmentKeys(ctx context.Context, now int64, batch int) (int64, error)
}

// eventSweeper deletes the events older than the retention and the expired stream tickets: a
// *store.Store on the primary.
type eventSweeper interface {
	SweepEvents(ctx context.Context, before int64, batch int) (int64, error)
}

func (s *App) eventRetention() time.Duration {
	if s.cfg.EventLogRetention <= 0 {
		return DefaultEventLogRetention
	}
	return s.cfg.EventLogRetention
}

// sweepRetries deletes the expired Idempotency-Key answers of every user on the primary, and the
// attachment keys older than attachment.KeyLifetime with the files they still hold, at once
// and then every interval, until ctx is done. A write deletes its own user's expired answers
// only, so without the sweep the answers of users who stopped writing would stay for ever. A
// sweep that deletes something logs how many; one that fails logs why, and the next one runs
// as planned. Every instance sweeps: two sweeps at once skip each other's rows (store.SweepRetries).
func (s *App) sweepRetries(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		now := s.now().Unix()
		n, err := s.retries.SweepRetries(ctx, now, store.RetrySweepBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("sweep of expired Idempotency-Key answers failed", "err", err, "deleted", n)
		case n > 0:
			s.log.Info("swept expired Idempotency-Key answers", "deleted", n)
		}
		// Uploads wait as long as answers are replayed: the sweep of both runs together.
		n, err = s.retries.SweepAttachmentKeys(ctx, now, store.AttachmentKeySweepBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("sweep of expired attachment keys failed", "err", err, "deleted", n)
		case n > 0:
			s.log.Info("swept expired attachment keys with their unattached files", "deleted", n)
		}
		// The event log keeps EventLogRetention; the tickets expired go with it.
		n, err = 0, nil
		if s.events != nil {
			n, err = s.events.SweepEvents(ctx, s.now().Add(-s.eventRetention()).Unix(), store.EventSweepBatch)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("sweep of the event log failed", "err", err, "deleted", n)
		case n > 0:
			s.log.Info("swept events older than the retention", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// startSweep runs sweepRetries in a goroutine until ctx is done or stop is called (interval 0:
// none); stop returns once the goroutine has.
func (s *App) startSweep(ctx context.Context, interval time.Duration) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var sweeping sync.WaitGroup
	sweeping.Go(func() { s.sweepRetries(ctx, interval) })
	return func() {
		cancel()
		sweeping.Wait()
	}
}
