package app

import (
	"context"
	"log/slog"
	"sync"

	"forumstats.local/forum-svc/internal/store"
)

// backfiller stores the HTML of the messages written before message_parsed existed: a
// *store.Store (store.BackfillMessageParsed says why it is stored rather than rendered on read).
type backfiller interface {
	BackfillMessageParsed(ctx context.Context, batch int) (int64, error)
}

// backfillMessageParsed runs the backfill once and logs what it wrote. Any message it has not
// reached (or that a failure left) is rendered when read, so a failure is logged, not fatal, and
// the next start takes the rest up.
func backfillMessageParsed(ctx context.Context, b backfiller, log *slog.Logger) error {
	n, err := b.BackfillMessageParsed(ctx, store.BackfillBatch)
	if n > 0 {
		log.Info("stored the HTML of messages written before message_parsed existed", "messages", n)
	}
	return err
}

// startBackfill runs the backfill in a goroutine, so that the service answers meanwhile (the
// messages not reached yet are rendered when read), until it is done or stop is called; stop
// returns once the goroutine has.
func (a *App) startBackfill(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() {
		if err := backfillMessageParsed(ctx, a.backfill, a.log); err != nil && ctx.Err() == nil {
			a.log.Warn("storing the HTML of messages written before message_parsed existed failed; they are rendered when read", "err", err)
		}
	})
	return func() {
		cancel()
		running.Wait()
	}
}
