// Package app builds forum-svc from its configuration. New opens what the configuration names (the
// database, migrated unless MIGRATE_ON_START is false, its read replica and Redis) and builds the
// HTTP service over it (rate limiters, authenticator, handler); Run serves it and sweeps the
// expired Idempotency-Key answers (sweep.go). Each other command of the CLI is a function of
// (ctx, cfg, log, its inputs) in commands.go. The command's main only parses flags and
// dispatches here; the tests build the service through New too (options.go: the seam that hands
// New dependencies the test opened itself), and the benchmark runs the built command, so that all
// of them run the same thing.
//
// stats-svc and collector-svc have the same shape: Config and LoadConfig, New(ctx, cfg, log,
// options) returning an *App with Handler, Run and Close, and each command a function of
// (ctx, cfg, log, its inputs).
package app

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/forum-svc/internal/httpapi"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/internal/webhook"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/backend"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/server"
)

// openDB opens the database of url for a command, applying pending migrations first when apply
// is set: the `migrate` command always sets it, every other command sets cfg.MigrateOnStart.
func openDB(ctx context.Context, url string, log *slog.Logger, apply bool) (*gorm.DB, error) {
	return migrate.Open(ctx, url, log, apply, migrations.Set)
}

// App is the assembled HTTP service. Close releases it.
type App struct {
	cfg     Config
	handler http.Handler

	retries retrySweeper // the store: its sweep deletes on the primary, whatever the reads use
	// backfill stores the HTML of the messages written before message_parsed existed (the store).
	backfill backfiller
	log      *slog.Logger
	now      func() time.Time

	backend *backend.Backend
	reads   *db.Reads

	webhooks *webhook.Worker // nil: this replica sends no webhook
	events   eventSweeper    // the store: the event log's and the tickets' sweep
	hub      *event.Hub
	stopHub  func() // ends the hub's Redis subscription and polling, and waits for them
}

// New builds the service: it opens the database (migrating it unless cfg.MigrateOnStart is
// false), the read replica and Redis (none: in-process rate limits).
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*App, error) {
	o := collect(opts)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b, err := backend.Open(ctx, cfg.Common, log, o.given, migrations.Set)
	if err != nil {
		return nil, err
	}
	// The replica is no readiness check: the primary answers while it is down.
	reads, err := db.OpenReads(b.DB, cfg.DatabaseReadURL, db.ReadsOptions{Service: "forum-svc", PinFor: cfg.PrimaryAfterWrite, Logger: log})
	if err != nil {
		b.Close()
		return nil, err
	}
	a := &App{cfg: cfg, log: log, now: o.now, backend: b, reads: reads}
	if err := a.build(o); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// build wires the store, the limiters, the authenticator and the handler over a's database.
func (a *App) build(o options) error {
	cfg, log, gdb, rc := a.cfg, a.log, a.backend.DB, a.backend.Redis
	st, err := store.New(gdb)
	if err != nil {
		return err
	}
	st.RouteReads(a.reads)
	a.retries, a.backfill = st, st
	if err := a.buildWebhooks(st, o); err != nil {
		return err
	}
	a.events = st
	// The event log: every write records its changes for the users who see them, and wakes their
	// streams once committed. The streams render the objects from the primary (primary, a store
	// without the replica), since an event may name what the replica does not have yet.
	st.AddRecorder(st.EventLog())
	a.hub = event.NewHub(st, event.HubOptions{Redis: rc, Logger: log})
	st.AddCommitted(a.hub.Prepare)
	primary, err := store.New(gdb)
	if err != nil {
		return err
	}
	hubCtx, cancel := context.WithCancel(context.Background())
	var hubRunning sync.WaitGroup
	hubRunning.Go(func() { a.hub.Run(hubCtx) })
	a.stopHub = func() {
		cancel()
		hubRunning.Wait()
	}
	rl := cfg.RateLimit
	if rl == (ratelimit.Config{}) { // a Config built without LoadConfig: the defaults
		rl = ratelimit.Config{PerMinute: DefaultRateLimit, Burst: ratelimit.DefaultBurst(DefaultRateLimit)}
	}
	failuresCfg := cfg.AuthFailures
	if failuresCfg == (ratelimit.Config{}) {
		failuresCfg = ratelimit.Config{PerMinute: DefaultAuthFailuresPerMinute, Burst: DefaultAuthFailuresBurst}
	}
	var limiter httpapi.Limiter = ratelimit.NewLocal(rl, o.now)
	var failures httpapi.Limiter = ratelimit.NewLocal(failuresCfg, o.now)
	ready := []server.Check{{Name: "database", Fn: db.Ping(gdb)}}
	if rc != nil {
		limiter = ratelimit.NewRedis(rc, RateLimitKeyPrefix, rl, log)
		failures = ratelimit.NewRedis(rc, AuthFailuresKeyPrefix, failuresCfg, log)
		// Redis is optional for correctness (the limiters fall back), so it is not a readiness check.
	}
	a.handler = httpapi.New(httpapi.Deps{
		Conversations: conversation.NewService(st, o.now),
		Attachments:   attachment.NewService(st, o.now),
		Auth:          auth.New(st, auth.Options{KeyLookupsPerSecond: cfg.KeyLookupsPerSecond, Now: o.now}),
		Limiter:       limiter,
		AuthFailures:  failures,
		Logger:        log,
		Ready:         ready,
		HTTP:          cfg.HTTP,
		Now:           o.now,
		Events: &httpapi.Events{Hub: a.hub, Tickets: st, Render: conversation.NewService(primary, o.now),
			Stream: o.stream, AllowedOrigins: cfg.CORSAllowedOrigins},
	})
	return nil
}

// Handler is the service's HTTP handler: shared/server's middleware and probes (/readyz pings
// the database) and the API.
func (a *App) Handler() http.Handler { return a.handler }

// Run serves the handler on cfg.HTTPAddr until ctx is done (`forum-svc serve`), sweeping the
// expired Idempotency-Key answers every cfg.RetrySweepInterval and sending the webhooks'
// deliveries (webhooks.go) meanwhile, and storing at once the HTML of the messages written before
// message_parsed existed (backfill.go).
func (a *App) Run(ctx context.Context) error {
	// The sweep ends before Run returns, so before Close closes the database, also when the
	// server fails to start.
	defer a.startSweep(ctx, a.cfg.RetrySweepInterval)()
	defer a.startWebhooks(ctx)()
	defer a.startBackfill(ctx)()
	// The event streams end when ctx is done, so that the server's shutdown does not wait for them.
	stop := context.AfterFunc(ctx, a.hub.Close)
	defer stop()
	return server.Run(ctx, a.handler, a.cfg.HTTPAddr, a.cfg.HTTP, a.log)
}

// Close closes what New opened: the replica, Redis and the database.
func (a *App) Close() {
	if a.stopHub != nil {
		a.hub.Close()
		a.stopHub()
	}
	a.reads.Close()
	a.backend.Close()
}

// Serve runs `forum-svc serve` until ctx is done.
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	a, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}
