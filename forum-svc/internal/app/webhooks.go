package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/internal/webhook"
	"forumstats.local/shared/config"
)

// The webhooks' part of the service: their configuration, the delivery worker that Run starts,
// and (in build) the store's recorder that writes their outbox.

// WebhookConfig is the webhooks' part of the configuration.
type WebhookConfig struct {
	// Concurrency is how many deliveries this replica sends at once (WEBHOOK_CONCURRENCY; 0: it
	// sends none, the other replicas do).
	Concurrency int
	// RetryMin is the pause before the first retry, doubled for each later one up to RetryMax
	// (WEBHOOK_RETRY_MIN, WEBHOOK_RETRY_MAX); Window is how long a delivery is retried before it
	// is dead-lettered (WEBHOOK_RETRY_WINDOW).
	RetryMin, RetryMax, Window time.Duration
	// Timeout bounds one attempt (WEBHOOK_TIMEOUT); PollInterval is the pause of a worker that
	// found nothing due (WEBHOOK_POLL_INTERVAL).
	Timeout, PollInterval time.Duration
	// AllowPrivate lets deliveries dial private, loopback and link-local addresses
	// (WEBHOOK_ALLOW_PRIVATE; tests and local runs only).
	AllowPrivate bool
}

// loadWebhookConfig reads WEBHOOK_CONCURRENCY (0 to 64, default 8), WEBHOOK_RETRY_MIN (100ms to
// 1h, default 5s), WEBHOOK_RETRY_MAX (from WEBHOOK_RETRY_MIN to 24h, default 1h),
// WEBHOOK_RETRY_WINDOW (1s to 7 days, default 24h), WEBHOOK_TIMEOUT (100ms to 60s, default 10s),
// WEBHOOK_POLL_INTERVAL (10ms to 1m, default 250ms) and WEBHOOK_ALLOW_PRIVATE (default false).
func loadWebhookConfig() (WebhookConfig, error) {
	var c WebhookConfig
	var err error
	if c.Concurrency, err = config.Int("WEBHOOK_CONCURRENCY", webhook.DefaultConcurrency); err != nil {
		return c, err
	}
	if c.Concurrency < 0 || c.Concurrency > 64 {
		return c, fmt.Errorf("WEBHOOK_CONCURRENCY must be from 0 to 64, not %d", c.Concurrency)
	}
	for _, d := range []struct {
		name     string
		to       *time.Duration
		def      time.Duration
		min, max time.Duration
	}{
		{"WEBHOOK_RETRY_MIN", &c.RetryMin, webhook.DefaultRetryMin, 100 * time.Millisecond, time.Hour},
		{"WEBHOOK_RETRY_MAX", &c.RetryMax, webhook.DefaultRetryMax, 100 * time.Millisecond, 24 * time.Hour},
		{"WEBHOOK_RETRY_WINDOW", &c.Window, webhook.DefaultWindow, time.Second, 7 * 24 * time.Hour},
		{"WEBHOOK_TIMEOUT", &c.Timeout, webhook.DefaultTimeout, 100 * time.Millisecond, time.Minute},
		{"WEBHOOK_POLL_INTERVAL", &c.PollInterval, webhook.DefaultPollInterval, 10 * time.Millisecond, time.Minute},
	} {
		if *d.to, err = config.Duration(d.name, d.def); err != nil {
			return c, err
		}
		if *d.to < d.min || *d.to > d.max {
			return c, fmt.Errorf("%s must be from %v to %v, not %v", d.name, d.min, d.max, *d.to)
		}
	}
	if c.RetryMax < c.RetryMin {
		return c, fmt.Errorf("WEBHOOK_RETRY_MAX (%v) must not be below WEBHOOK_RETRY_MIN (%v)", c.RetryMax, c.RetryMin)
	}
	if c.AllowPrivate, err = config.Bool("WEBHOOK_ALLOW_PRIVATE", false); err != nil {
		return c, err
	}
	return c, nil
}

// buildWebhooks makes st write the webhooks' outbox in every write's transaction (whatever this
// replica sends) and builds the worker that sends the deliveries, unless WEBHOOK_CONCURRENCY is 0.
// The worker renders the objects through a store of its own that reads the primary: a replica may
// not have the change yet.
func (a *App) buildWebhooks(st *store.Store, o options) error {
	st.AddRecorder(webhook.Recorder{Now: o.now})
	c := a.cfg.Webhooks
	if c.Concurrency == 0 {
		return nil
	}
	primary, err := store.New(a.backend.DB)
	if err != nil {
		return err
	}
	w, err := webhook.NewWorker(a.backend.DB, webhook.APIRenderer{Reader: conversation.NewService(primary, o.now)}, webhook.Options{
		PollInterval: c.PollInterval, RetryMin: c.RetryMin, RetryMax: c.RetryMax, Window: c.Window, Timeout: c.Timeout,
		Concurrency: c.Concurrency, AllowPrivate: c.AllowPrivate, Now: o.now, Log: a.log,
	})
	if err != nil {
		return err
	}
	a.webhooks = w
	return nil
}

// startWebhooks runs the webhook worker until ctx is done or stop is called; stop returns once
// the worker has (an attempt in flight is given back, uncounted).
func (a *App) startWebhooks(ctx context.Context) (stop func()) {
	if a.webhooks == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { a.webhooks.Run(ctx) })
	return func() {
		cancel()
		running.Wait()
	}
}
