package livegw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/gateway"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
)

// DefaultLockRetry is how often a replica tries to take the shards no replica holds: a replica
// that dies loses its shards to the others within this period (plus the database's notice of
// the dead connection).
const DefaultLockRetry = 5 * time.Second

// Locker is one shard's lock: held by one replica at a time, and lost when its holder's
// connection to the database ends (collector-svc/internal/lock).
type Locker interface {
	TryAcquire(ctx context.Context) (bool, error)
	Check(ctx context.Context) error
	Release()
}

// Replicas counts the replicas counting live, this one included (lock.Presence): each takes at
// most its share of the shards.
type Replicas interface {
	Replicas(ctx context.Context) (int, error)
	Leave()
}

// Flushed is what AfterFlush is told of a shard's successful flush.
type Flushed struct {
	Shard, NumShards int
	Checkpoint       live.Checkpoint
	// Flusher is the shard's: Fill adds a gap's search counts to its next flush, Coverage-related
	// reads go through it.
	Flusher *live.Flusher
	// Batch is what the flush stored (the servers whose counts changed).
	Batch *live.Batch
}

// AfterFlush is told of every successful flush of a held shard, after its transaction
// committed: the gap filler and the writer of today's reports from live counts hang here. It
// runs on the shard's flush loop, so a slow one delays the shard's next flush; an error is
// logged and changes nothing else.
type AfterFlush interface {
	Flushed(ctx context.Context, f Flushed) error
}

// Config configures Run.
type Config struct {
	APIBase, Token string
	HTTPClient     *http.Client
	DB             *gorm.DB // the migrated reports database (live_* tables)
	// Lock returns the lock of a shard (lock.NewShard).
	Lock func(shard int) (Locker, error)
	// Replicas, when set, makes this replica hold at most its share of the shards,
	// ceil(shards / replicas), letting go of those beyond it (a last flush, then the connection
	// closed with 4000, so that another replica resumes them): the shards spread over the
	// replicas. nil (SQLite, one process): every free shard is taken.
	Replicas Replicas
	// FlushInterval is LIVE_FLUSH_INTERVAL; LockRetry is LIVE_SHARD_LOCK_RETRY, the pause between
	// tries of the free shards' locks.
	FlushInterval, LockRetry time.Duration
	// IdentifyInterval separates identifies of one max_concurrency bucket (default Discord's 5 s).
	IdentifyInterval time.Duration
	// Shard holds the per-connection knobs of gateway.ShardConfig (backoff, read limit).
	Shard gateway.ShardConfig
	// Now is the clock of counting (when a server's counting began, when a flush was made, which
	// hours are still refreshed); default time.Now.
	Now        func() time.Time
	Logger     *slog.Logger
	AfterFlush AfterFlush // nil: none
}

// Run counts live until ctx ends (nil) or a shard is closed with a code after which Discord
// forbids reconnecting (a *gateway.FatalError: every shard of this replica stops, after a last
// flush). It reads the shard count from /gateway/bot, then every LockRetry takes the lock of each
// shard no replica holds, up to its share, and counts it until ctx ends, its lock is lost, its
// stored checkpoint moved under it (another replica wrote the shard), or it is beyond the share;
// a shard let go is tried again later.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LockRetry <= 0 {
		cfg.LockRetry = DefaultLockRetry
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = live.DefaultFlushInterval
	}
	if cfg.IdentifyInterval <= 0 {
		cfg.IdentifyInterval = gateway.DefaultIdentifyInterval
	}
	log := cfg.Logger
	bot, err := fetchBot(ctx, cfg)
	if err != nil || ctx.Err() != nil {
		return nil // ctx ended
	}
	metricShardsTotal.Set(float64(bot.Shards))
	metricStopped.Set(0)
	locks := make([]Locker, bot.Shards)
	for i := range locks {
		if locks[i], err = cfg.Lock(i); err != nil {
			return fmt.Errorf("live counting: lock of shard %d: %w", i, err)
		}
	}
	if cfg.Replicas != nil {
		defer cfg.Replicas.Leave()
	}
	o := &owner{cfg: cfg, bot: bot, store: live.NewStore(cfg.DB), gate: gateway.NewLimiter(bot.SessionStartLimit, cfg.IdentifyInterval),
		held: make([]context.CancelFunc, bot.Shards), releasing: make([]bool, bot.Shards), log: log}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(cfg.LockRetry)
	defer t.Stop()
	for {
		share := o.share(ctx)
		o.letGoBeyond(share)
		for shard, lk := range locks {
			if o.kept() >= share {
				break
			}
			if o.isHeld(shard) {
				continue
			}
			ok, err := lk.TryAcquire(ctx)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("live counting: cannot try a shard's lock", "shard", shard, "err", err)
				}
				continue
			}
			if !ok {
				continue
			}
			shardCtx, stopShard := context.WithCancel(ctx)
			o.setHeld(shard, stopShard)
			wg.Go(func() {
				defer func() { stopShard(); lk.Release(); o.setHeld(shard, nil) }()
				if err := o.count(shardCtx, shard, lk); err != nil {
					var fatal *gateway.FatalError
					if errors.As(err, &fatal) {
						cancel(err)
						return
					}
					log.Warn("live counting: shard let go", "shard", shard, "err", err)
				}
			})
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
				metricStopped.Set(1)
				log.Error("live counting stopped on this replica: Discord forbids reconnecting after this close code; the REST pass goes on; fix the configuration and restart",
					"err", err)
				return err
			}
			return nil
		case <-t.C:
		}
	}
}

// fetchBot asks /gateway/bot until it answers or ctx ends: Discord (or the network) may be
// down when the collector starts.
func fetchBot(ctx context.Context, cfg Config) (gateway.Bot, error) {
	for {
		bot, err := gateway.FetchBot(ctx, cfg.HTTPClient, cfg.APIBase, cfg.Token)
		if err == nil {
			return bot, nil
		}
		if ctx.Err() != nil {
			return bot, ctx.Err()
		}
		cfg.Logger.Warn("live counting: cannot read /gateway/bot, trying again", "err", err, "retry", cfg.LockRetry.String())
		t := time.NewTimer(cfg.LockRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return bot, ctx.Err()
		case <-t.C:
		}
	}
}

type owner struct {
	cfg   Config
	bot   gateway.Bot
	store *live.Store
	gate  *gateway.Limiter
	log   *slog.Logger

	mu sync.Mutex
	// held has the stop of each shard held (nil: not held); releasing marks those stopped to
	// go to another replica, until they are let go.
	held      []context.CancelFunc
	releasing []bool
}

func (o *owner) isHeld(shard int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held[shard] != nil
}

func (o *owner) setHeld(shard int, stop context.CancelFunc) {
	o.mu.Lock()
	o.held[shard] = stop
	o.releasing[shard] = false
	n := 0
	for _, h := range o.held {
		if h != nil {
			n++
		}
	}
	o.mu.Unlock()
	metricShardsHeld.Set(float64(n))
}

// kept is the number of shards held and not being let go.
func (o *owner) kept() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for s, h := range o.held {
		if h != nil && !o.releasing[s] {
			n++
		}
	}
	return n
}

// share is how many shards this replica may hold: ceil(shards / replicas), or every shard when
// the replicas cannot be counted (a shard held by nobody is worse than shards held unevenly).
func (o *owner) share(ctx context.Context) int {
	if o.cfg.Replicas == nil {
		return o.bot.Shards
	}
	n, err := o.cfg.Replicas.Replicas(ctx)
	if err != nil || n < 1 {
		if ctx.Err() == nil {
			o.log.Warn("live counting: cannot count the replicas; taking any free shard", "err", err)
		}
		return o.bot.Shards
	}
	return (o.bot.Shards + n - 1) / n
}

// letGoBeyond stops the highest-numbered shards held beyond share: each is flushed and its
// connection closed with 4000, so that the replica that takes it resumes its session.
func (o *owner) letGoBeyond(share int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	kept := 0
	for s, h := range o.held {
		if h != nil && !o.releasing[s] {
			kept++
		}
	}
	for s := len(o.held) - 1; s >= 0 && kept > share; s-- {
		if o.held[s] != nil && !o.releasing[s] {
			o.log.Info("live counting: letting a shard go to another replica", "shard", s, "share", share)
			o.releasing[s] = true
			o.held[s]()
			kept--
		}
	}
}

// keepFrom is the oldest time the collector still refreshes at now: the start of the previous
// Moscow month (reports.RefreshedAt). A deletion of an older message changes no count, and older
// gaps are never searched.
func keepFrom(now time.Time) time.Time { return reports.RefreshedAt(now).Months[1].Start() }

// Why a shard is let go, besides the store's ErrCheckpointMoved and the gateway's FatalError.
var (
	errLockLost = errors.New("the shard's lock was lost")
	errStopped  = errors.New("the shard is stopping")
)

// count counts shard while this replica holds its lock: it loads the shard's state, resumes its
// session from the stored checkpoint, applies every dispatch, and flushes every FlushInterval.
// It returns when ctx ends (after a last flush, then closing the connection with 4000 so that
// the next holder resumes), when the lock is lost or the stored checkpoint moved (without a last
// flush), or with the gateway's *FatalError.
func (o *owner) count(ctx context.Context, shard int, lk Locker) error {
	log := o.log.With("shard", shard)
	m := newShardMetrics(shard)
	defer m.forget()
	st, err := o.store.Load(ctx, shard, o.bot.Shards, keepFrom(o.cfg.Now()))
	if err != nil {
		return err
	}
	acc := live.NewAccumulator(shard, o.bot.Shards, st)
	acc.SetCutoff(keepFrom(o.cfg.Now()))
	stop := make(chan error, 1)
	w := &writer{store: o.store, lock: lk, m: m, stop: stop, lastOK: time.Now()}
	fl := live.NewFlusher(acc, w, o.cfg.Now, log)
	w.flushed = func(ctx context.Context, b live.Batch) {
		if o.cfg.AfterFlush == nil {
			return
		}
		if err := o.cfg.AfterFlush.Flushed(ctx, Flushed{Shard: shard, NumShards: o.bot.Shards, Checkpoint: b.Next, Flusher: fl, Batch: &b}); err != nil {
			log.Warn("live counting: after the flush", "err", err)
		}
	}
	sc := o.cfg.Shard
	sc.ID, sc.Count, sc.URL, sc.Token, sc.Gate, sc.Logger = shard, o.bot.Shards, o.bot.URL, o.cfg.Token, o.gate, o.cfg.Logger
	if sc.HTTPClient == nil {
		sc.HTTPClient = o.cfg.HTTPClient
	}
	sh := gateway.NewShard(sc, resumeFrom(st.Checkpoint))
	log.Info("live counting: shard taken", "session", st.Checkpoint.SessionID, "seq", st.Checkpoint.Seq)

	gwCtx, gwCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer gwCancel()
	flCtx, flCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer flCancel()
	gwDone := make(chan error, 1)
	started := false
	go func() {
		gwDone <- sh.Run(gwCtx, func(ev gateway.Event) {
			switch ev.Type {
			case live.TypeReady:
				m.identifies.Inc()
			case live.TypeResumed:
				m.resumes.Inc()
			}
			if ev.Type == live.TypeReady || ev.Type == live.TypeResumed {
				if started {
					m.reconnects.Inc()
				}
				started = true
			}
			m.event(ev.Type)
			fl.Apply(Event(ev))
		})
	}()
	flDone := make(chan struct{})
	go func() {
		fl.Run(flCtx, o.cfg.FlushInterval)
		close(flDone)
	}()

	tick := time.NewTicker(o.cfg.LockRetry)
	defer tick.Stop()
	o.observeGaps(ctx, shard, m)
	var why error
	for why == nil {
		select {
		case <-ctx.Done():
			why = errStopped
		case err := <-stop:
			why = err
		case err := <-gwDone:
			gwDone <- err
			why = err
			if why == nil {
				why = errStopped
			}
		case <-tick.C:
			fl.SetCutoff(keepFrom(o.cfg.Now()))
			m.lag.Set(time.Since(w.lastFlush()).Seconds())
			o.observeGaps(ctx, shard, m)
		}
	}
	var fatal *gateway.FatalError
	if errors.Is(why, errLockLost) || errors.Is(why, live.ErrCheckpointMoved) {
		// Another replica may count the shard now: no flush of ours may follow its.
		w.refuse()
	}
	// The last flush first (Flusher.Run flushes once more when its context ends), then the
	// connection closed with 4000, so that whoever counts next resumes the session.
	flCancel()
	<-flDone
	gwCancel()
	gwErr := <-gwDone
	if errors.As(gwErr, &fatal) {
		return gwErr
	}
	log.Info("live counting: shard let go", "why", why, "seq", fl.Checkpoint().Seq)
	if errors.Is(why, errStopped) {
		return nil
	}
	return why
}

// observeGaps sets the shard's gap metrics from the stored unfilled gaps of its servers.
func (o *owner) observeGaps(ctx context.Context, shard int, m *shardMetrics) {
	var gaps []struct {
		GuildID      string
		MinID, MaxID int64
		RecordedAt   time.Time
	}
	err := o.cfg.DB.WithContext(ctx).Table("live_gaps").Select("guild_id, min_id, max_id, recorded_at").
		Where("NOT filled AND max_id > ?", int64(discord.SnowflakeAt(keepFrom(o.cfg.Now())))).Find(&gaps).Error
	if err != nil {
		return // the next tick tries again; a failing database shows in the flushes
	}
	var hours float64
	var oldest time.Time
	for _, g := range gaps {
		gid, err := parseGuild(g.GuildID)
		if err != nil || int((gid>>22)%uint64(o.bot.Shards)) != shard {
			continue
		}
		hours += discord.SnowflakeTime(uint64(g.MaxID)).Sub(discord.SnowflakeTime(uint64(g.MinID))).Hours()
		if oldest.IsZero() || g.RecordedAt.Before(oldest) {
			oldest = g.RecordedAt
		}
	}
	m.gapHours.Set(hours)
	if oldest.IsZero() {
		m.oldestGap.Set(0)
	} else {
		m.oldestGap.Set(max(o.cfg.Now().Sub(oldest).Seconds(), 0))
	}
}

// writer is the shard's live.Writer: the store, behind a check of the shard's lock, with the
// flush metrics, and telling count to let the shard go when the lock is lost or the stored
// checkpoint moved.
type writer struct {
	store   *live.Store
	lock    Locker
	m       *shardMetrics
	stop    chan<- error
	flushed func(context.Context, live.Batch)

	refused atomic.Bool
	mu      sync.Mutex
	lastOK  time.Time
}

func (w *writer) refuse() { w.refused.Store(true) }

func (w *writer) lastFlush() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastOK
}

func (w *writer) letGo(err error) {
	w.refuse()
	select {
	case w.stop <- err:
	default:
	}
}

// Flush checks the lock on its connection before writing: a replica that lost it writes
// nothing more. Between the check and the commit the stored checkpoint guards the shard.
func (w *writer) Flush(ctx context.Context, b live.Batch) error {
	if w.refused.Load() {
		return errStopped
	}
	if err := w.lock.Check(ctx); err != nil {
		err = fmt.Errorf("%w: %w", errLockLost, err)
		w.letGo(err)
		return err
	}
	start := time.Now()
	err := w.store.Flush(ctx, b)
	w.m.flush.Observe(time.Since(start).Seconds())
	if err != nil {
		w.m.failures.Inc()
		if errors.Is(err, live.ErrCheckpointMoved) {
			w.letGo(err)
		}
		return err
	}
	w.mu.Lock()
	w.lastOK = time.Now()
	w.mu.Unlock()
	w.m.lag.Set(0)
	w.flushed(ctx, b)
	return nil
}
