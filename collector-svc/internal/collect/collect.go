// Package collect runs collection passes: for every catalog server it fetches the guild's
// metadata and channels from Discord, counts messages for the pass's Moscow windows and writes
// each report whole; a window whose refresh fails leaves its earlier report marked stale.
package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
)

// Discord is what a pass needs of the Discord client.
type Discord interface {
	Guild(ctx context.Context, guildID string) (discord.Guild, error)
	Channels(ctx context.Context, guildID string) ([]discord.Channel, error)
	// CountMessages counts the messages of [from, to); channelID "" counts the whole server.
	CountMessages(ctx context.Context, guildID, channelID string, from, to time.Time) (int64, error)
}

// Store is what passes and Serve need of the reports database. Every write that changes what
// stats-svc serves is its own transaction; internal/store is the implementation.
type Store interface {
	// RecordPassStart records a pass's start and the pause between passes stats-svc reports.
	RecordPassStart(ctx context.Context, start time.Time, refreshMinutes int) error
	// RecordPassEnd records a pass's end; passErr nil makes it the last good pass.
	RecordPassEnd(ctx context.Context, finish time.Time, passErr error) error
	// State is the recorded state of the passes (Serve keeps the schedule by it).
	State(ctx context.Context) (reports.CollectorState, error)
	// SyncCatalog replaces the catalog with entries (already validated).
	SyncCatalog(ctx context.Context, entries []catalog.Entry) error
	// Catalog is the stored catalog ordered by number.
	Catalog(ctx context.Context) ([]catalog.Entry, error)
	// SaveGuild records a guild's icon and banner (nil: none) fetched at at.
	SaveGuild(ctx context.Context, guildID string, icon, banner *string, at time.Time) error
	// MissingDays returns those of days (labels) that have no daily report of the guild.
	MissingDays(ctx context.Context, guildID string, days []string) ([]string, error)
	// SaveReport writes a whole report: r replaces the stored one, channels (all of r's guild
	// and period) replace its channels.
	SaveReport(ctx context.Context, kind reports.Kind, r reports.Row, channels []reports.ChannelRow) error
	// Report returns the stored report of kind for the guild and period with its channels;
	// found false when there is none.
	Report(ctx context.Context, kind reports.Kind, guildID, period string) (r reports.Row, channels []reports.ChannelRow, found bool, err error)
	// MarkStale marks an existing report stale with the error, keeping its counts; it reports
	// whether one existed (a report never collected stays missing).
	MarkStale(ctx context.Context, kind reports.Kind, guildID, period, code, message string) (bool, error)
}

// Config configures a Collector.
type Config struct {
	Discord Discord
	Store   Store
	// CatalogFile, when set, is the source of truth of the catalog, written to the database at
	// every pass; when empty the stored catalog stands.
	CatalogFile string
	// RefreshMinutes is recorded at every pass for stats-svc.
	RefreshMinutes int
	// Concurrency is how many servers are collected at once (default 32) and PerServer how many
	// requests each keeps waiting or in flight (default 32): enough that the client's scheduler
	// always has a request whose bucket has a permit, so that only its global cap binds, whatever
	// the answers' latency; the client, not these, keeps to Discord's limits.
	Concurrency int
	PerServer   int
	// MaxRPS is the client's cap (DISCORD_MAX_RPS, default 50): a pass's expected time is its
	// requests ÷ MaxRPS.
	MaxRPS float64
	// Live, when set (DISCORD_GATEWAY=on), tells which servers live counting covers: their open
	// windows are written from live counts, not by the pass (LiveOwns). LiveFresh is how recently
	// a server's shard must have been flushed for that (LIVE_GAP_DELAY). Nil: the pass writes
	// every window, as a search-only collector.
	Live      LiveCounts
	LiveFresh time.Duration
	Now       func() time.Time // default time.Now
	Logger    *slog.Logger
}

// Collector runs passes.
type Collector struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	forbidden map[string]forbiddenMark // channel id → its last 403
}

// forbiddenMark remembers a channel that answered 403, with its permission overwrites then.
type forbiddenMark struct {
	at         time.Time
	overwrites string
}

// forbiddenFor is how long a channel that answered 403 is not asked again (unless its
// permission overwrites change): invalid requests count towards Discord's 10,000 in 10 minutes.
const forbiddenFor = 24 * time.Hour

// New returns a Collector for cfg.
func New(cfg Config) *Collector {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 32
	}
	if cfg.PerServer <= 0 {
		cfg.PerServer = 32
	}
	if cfg.MaxRPS <= 0 {
		cfg.MaxRPS = discord.DefaultGlobalRate
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RefreshMinutes <= 0 {
		cfg.RefreshMinutes = 10
	}
	return &Collector{cfg: cfg, log: cfg.Logger, forbidden: map[string]forbiddenMark{}}
}

// ErrPassFailed is wrapped by the error of a pass that did not refresh everything.
var ErrPassFailed = errors.New("collection pass failed")

// Result sums up a pass.
type Result struct {
	Start, Finish time.Time
	Servers       int
	Written       int       // reports written whole
	Requests      int64     // Discord calls made (each may be several attempts)
	Reused        int       // closed windows whose unchanged total kept the stored channel counts
	Live          int       // windows left to live counting (LiveOwns)
	Failures      []Failure // windows (or steps) that failed, in no particular order
}

// Failure is one report that could not be refreshed (Period "" for a step of the pass itself,
// like reading the catalog file).
type Failure struct {
	GuildID string
	Kind    reports.Kind
	Period  string
	Code    string
	Message string
	Stale   bool // an earlier report exists and was marked stale
}

// Pass runs one collection pass. Its windows are computed once, at its start. It returns an
// error wrapping ErrPassFailed when any report could not be refreshed (after finishing the
// others), or at once on a 401; other errors mean the pass could not run at all.
func (c *Collector) Pass(ctx context.Context) (Result, error) {
	start := c.cfg.Now()
	res := Result{Start: start}
	if err := c.cfg.Store.RecordPassStart(ctx, start, c.cfg.RefreshMinutes); err != nil {
		return res, err
	}
	r := &run{c: c, res: &res, start: start, windows: reports.ForPass(start)}
	err := r.do(ctx)
	res.Finish = c.cfg.Now()
	res.Requests = r.requests.Load()
	if err == nil && len(res.Failures) > 0 {
		err = summarize(res.Failures)
	}
	// Record even when ctx ended (shutdown): the state must say the pass did not complete.
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if rerr := c.cfg.Store.RecordPassEnd(recordCtx, res.Finish, err); rerr != nil {
		c.log.Error("cannot record the end of the pass", "err", rerr)
		if err == nil {
			err = rerr
		}
	}
	duration := res.Finish.Sub(start)
	metricPassDuration.Observe(duration.Seconds())
	// The least time the cap allows for the requests the pass made: when it exceeds the pause
	// between passes, the budget is short (today and the current month went first).
	expected := time.Duration(float64(res.Requests) / c.cfg.MaxRPS * float64(time.Second))
	metricPassExpected.Set(expected.Seconds())
	metricPassActual.Set(duration.Seconds())
	metricPassRequests.Set(float64(res.Requests))
	budget := time.Duration(c.cfg.RefreshMinutes) * time.Minute
	c.log.Info("pass time", "requests", res.Requests, "max_rps", c.cfg.MaxRPS, "expected", expected.Round(time.Millisecond).String(),
		"actual", duration.Round(time.Millisecond).String(), "budget", budget.String(), "budget_short", expected > budget,
		"reused_closed_windows", res.Reused, "live_windows", res.Live)
	if err != nil && ctx.Err() != nil {
		metricPasses.WithLabelValues("interrupted").Inc()
		c.log.Info("pass interrupted", "servers", res.Servers, "written", res.Written, "duration", duration.String())
		return res, err
	}
	if err != nil {
		metricPasses.WithLabelValues("failed").Inc()
		c.log.Warn("pass failed", "servers", res.Servers, "written", res.Written, "failures", len(res.Failures),
			"duration", duration.String(), "err", err)
		return res, err
	}
	metricPasses.WithLabelValues("ok").Inc()
	metricLastGoodPass.Set(float64(res.Finish.Unix()))
	c.log.Info("pass finished", "servers", res.Servers, "written", res.Written, "duration", duration.String())
	return res, nil
}

func summarize(fs []Failure) error {
	f := fs[0]
	for _, g := range fs {
		if g.Code == CodeUnauthorized {
			f = g
			break
		}
	}
	what := "catalog"
	if f.GuildID != "" {
		what = fmt.Sprintf("guild %s %s %s", f.GuildID, f.Kind, f.Period)
	}
	if f.Code == CodeUnauthorized {
		return fmt.Errorf("%w: Discord refused the token (401), pass stopped: %s", ErrPassFailed, f.Message)
	}
	return fmt.Errorf("%w: %d report(s) not refreshed (first: %s: %s: %s)", ErrPassFailed, len(fs), what, f.Code, f.Message)
}

// SyncCatalogFile writes the catalog file, when one is configured, to the database.
func (c *Collector) SyncCatalogFile(ctx context.Context) error {
	if c.cfg.CatalogFile == "" {
		return nil
	}
	entries, err := catalog.Load(c.cfg.CatalogFile)
	if err != nil {
		return err
	}
	return c.cfg.Store.SyncCatalog(ctx, entries)
}

// run is the state of one pass.
type run struct {
	c        *Collector
	res      *Result
	start    time.Time
	windows  []reports.Window
	requests atomic.Int64

	mu      sync.Mutex
	aborted error // the 401 that stopped the pass
}

// server is one catalog server during a pass.
type server struct {
	catalog.Entry
	log      *slog.Logger
	ready    bool              // its guild and channel list were read
	channels []discord.Channel // message-bearing
	later    []reports.Window  // its closed windows, counted after every server's open ones
	done     map[string]bool   // windows written or failed, by label
	live     map[string]bool   // windows live counting writes (LiveOwns), by label
}

// do collects every server in two rounds, freshness first: the guild, its channels and the open
// windows (today, the current month) of every server, then the closed windows (yesterday, the
// previous month, backfill days). When the pass outlasts its budget, what readers look at most
// is already fresh; otherwise the order costs only the tail of the first round.
func (r *run) do(ctx context.Context) error {
	if err := r.c.SyncCatalogFile(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The catalog stored at the last good read stands; the pass still collects it.
		r.fail(Failure{Code: "catalog_error", Message: err.Error()})
	}
	entries, err := r.c.cfg.Store.Catalog(ctx)
	if err != nil {
		return err
	}
	r.res.Servers = len(entries)
	counted := r.liveCounted(ctx)
	servers := make([]*server, len(entries))
	for i, e := range entries {
		s := &server{Entry: e, log: r.c.log.With("guild_id", e.GuildID, "number", e.Number), done: map[string]bool{},
			live: map[string]bool{}}
		c, counting := counted[e.GuildID]
		for _, w := range r.windows {
			if counted != nil && LiveOwns(w, c, counting, r.start, r.c.cfg.LiveFresh) {
				s.live[w.Label] = true
				r.res.Live++
			}
		}
		servers[i] = s
	}

	// Discord calls stop at once on a 401; writes (stale marks) still go through on ctx.
	discordCtx, stopDiscord := context.WithCancel(ctx)
	defer stopDiscord()
	r.each(ctx, servers, func(s *server) { r.open(ctx, discordCtx, stopDiscord, s) })
	r.each(ctx, servers, func(s *server) {
		for _, w := range s.later {
			r.collect(ctx, discordCtx, stopDiscord, s, w)
		}
	})
	if ctx.Err() != nil {
		return ctx.Err() // shutdown: nothing failed, the pass just stops
	}
	if err := r.abortErr(); err != nil {
		// A 401 stopped the pass: every regular window not refreshed is stale.
		for _, s := range servers {
			for _, w := range r.regular() {
				if !s.done[w.Label] && !s.live[w.Label] {
					r.failWindow(ctx, s.log, s.GuildID, w, err)
				}
			}
		}
	}
	return nil
}

// each runs fn for every server, Concurrency at once, until ctx ends.
func (r *run) each(ctx context.Context, servers []*server, fn func(*server)) {
	limited(ctx, r.c.cfg.Concurrency, servers, func(_ int, s *server) { fn(s) })
}

// limited runs fn for each item in its own goroutine, at most limit at once, and waits for them;
// once ctx ends it starts no more.
func limited[T any](ctx context.Context, limit int, items []T, fn func(int, T)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i, it)
		})
	}
	wg.Wait()
}

func (r *run) fail(f Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Failures = append(r.res.Failures, f)
}

func (r *run) abortErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.aborted
}

// open reads the server's metadata and channels, counts its open windows and plans its closed
// ones.
func (r *run) open(ctx, dctx context.Context, stopDiscord context.CancelFunc, s *server) {
	d, st := r.c.cfg.Discord, r.c.cfg.Store
	// failed tells whether a request for the server failed; unless the pass is stopping, it
	// marks every regular window of the server stale with err's code (backfill days are missing
	// by definition, so only the regular windows can be marked).
	failed := func(err error) bool {
		if err == nil {
			return false
		}
		if err = r.discordErr(ctx, err, stopDiscord); ctx.Err() == nil {
			for _, w := range r.regular() {
				if s.live[w.Label] {
					continue // written from live counts
				}
				s.done[w.Label] = true
				r.failWindow(ctx, s.log, s.GuildID, w, err)
			}
		}
		return true
	}
	if r.abortErr() != nil {
		return // marked at the end of the pass
	}
	r.requests.Add(1)
	g, err := d.Guild(dctx, s.GuildID)
	if failed(err) {
		return
	}
	if err := st.SaveGuild(ctx, s.GuildID, g.Icon, g.Banner, r.c.cfg.Now()); err != nil {
		s.log.Error("cannot save guild metadata", "err", err)
		r.fail(Failure{GuildID: s.GuildID, Code: CodeStoreError, Message: "could not save guild metadata"})
	}
	r.requests.Add(1)
	all, err := d.Channels(dctx, s.GuildID)
	if failed(err) {
		return
	}
	for _, ch := range all {
		if discord.MessageBearing(ch.Type) {
			s.channels = append(s.channels, ch)
		}
	}
	s.ready = true
	backfill, err := r.backfill(ctx, s.GuildID)
	if err != nil {
		s.log.Error("cannot read which days are missing; not backfilling", "err", err)
	}
	for _, w := range r.regular() {
		switch {
		case s.live[w.Label]:
			// Written from live counts (LiveOwns).
		case r.closed(w):
			s.later = append(s.later, w)
		default:
			r.collect(ctx, dctx, stopDiscord, s, w)
		}
	}
	s.later = append(s.later, backfill...)
}

// liveCounted reads which servers live counting covers; nil when the pass writes every window
// (no live counting configured, or it could not be read: the pass then refreshes everything,
// so that no window is left unwritten).
func (r *run) liveCounted(ctx context.Context) map[string]live.Counted {
	if r.c.cfg.Live == nil {
		return nil
	}
	counted, err := r.c.cfg.Live.Counted(ctx)
	if err != nil {
		r.c.log.Warn("cannot read which servers are counted live; the pass writes every window", "err", err)
		return nil
	}
	if counted == nil {
		counted = map[string]live.Counted{}
	}
	return counted
}

// closed tells whether nothing can be added to w any more: it ended before the pass started.
func (r *run) closed(w reports.Window) bool { return !w.To.After(r.start) }

// collect counts one window of the server and writes it, or records its failure.
func (r *run) collect(ctx, dctx context.Context, stopDiscord context.CancelFunc, s *server, w reports.Window) {
	if !s.ready || ctx.Err() != nil || r.abortErr() != nil {
		return
	}
	err := r.window(ctx, dctx, s, w)
	if err == nil {
		s.done[w.Label] = true
		return
	}
	err = r.discordErr(ctx, err, stopDiscord)
	if ctx.Err() != nil {
		return // shutdown: nothing failed, the pass just stops
	}
	s.done[w.Label] = true
	r.failWindow(ctx, s.log, s.GuildID, w, err)
}

// discordErr records a 401 as the pass's abort and stops all Discord calls; an error caused by
// that stop is replaced by the 401 itself.
func (r *run) discordErr(ctx context.Context, err error, stopDiscord context.CancelFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if errors.Is(err, discord.ErrUnauthorized) {
		if r.aborted == nil {
			r.aborted = err
			stopDiscord()
		}
		return err
	}
	if r.aborted != nil && errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return r.aborted
	}
	return err
}

func (r *run) regular() []reports.Window {
	var out []reports.Window
	for _, w := range r.windows {
		if !w.Backfill {
			out = append(out, w)
		}
	}
	return out
}

// backfill returns the backfill days the server has no report for: all six on its first
// collection, and after that only days a failure or an outage left missing.
func (r *run) backfill(ctx context.Context, guildID string) ([]reports.Window, error) {
	var labels []string
	for _, w := range r.windows {
		if w.Backfill {
			labels = append(labels, w.Label)
		}
	}
	missing, err := r.c.cfg.Store.MissingDays(ctx, guildID, labels)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(missing))
	for _, d := range missing {
		want[d] = true
	}
	var out []reports.Window
	for _, w := range r.windows {
		if w.Backfill && want[w.Label] {
			out = append(out, w)
		}
	}
	return out, nil
}

// window counts one window and writes its report whole. The server total comes first; the
// channels need no request when it is 0, nor when the window is closed and the total is the one
// of the stored report (nothing can be added to a closed window, and a deletion changes the
// total): the stored channel counts are then still true.
func (r *run) window(ctx, dctx context.Context, s *server, w reports.Window) error {
	r.requests.Add(1)
	total, err := r.c.cfg.Discord.CountMessages(dctx, s.GuildID, "", w.From, w.To)
	if err != nil {
		return err
	}
	row := reports.Row{GuildID: s.GuildID, Period: w.Label, Status: reports.StatusOK, TotalMessages: total}
	counts, ok := r.stored(ctx, s, w, total)
	if ok {
		r.mu.Lock()
		r.res.Reused++
		r.mu.Unlock()
	} else {
		var n int64
		counts, n, err = r.c.CountChannels(dctx, s.GuildID, s.channels, w.From, w.To, total, r.start)
		r.requests.Add(n)
		if err != nil {
			return err
		}
		for i := range counts {
			counts[i].Period = w.Label
		}
	}
	row.GeneratedAt = r.c.cfg.Now()
	if err := r.c.cfg.Store.SaveReport(ctx, w.Kind, row, counts); err != nil {
		s.log.Error("cannot write report", "kind", w.Kind.String(), "period", w.Label, "err", err)
		return errStore
	}
	metricReports.WithLabelValues(w.Kind.String(), "ok").Inc()
	r.mu.Lock()
	r.res.Written++
	r.mu.Unlock()
	return nil
}

// stored returns the channel counts of the stored report of a closed window whose total is
// total, renamed as the channels are now; ok false when they must be counted.
func (r *run) stored(ctx context.Context, s *server, w reports.Window, total int64) ([]reports.ChannelRow, bool) {
	if total == 0 || !r.closed(w) {
		return nil, false
	}
	row, channels, found, err := r.c.cfg.Store.Report(ctx, w.Kind, s.GuildID, w.Label)
	if err != nil {
		s.log.Warn("cannot read the stored report; counting its channels", "kind", w.Kind.String(), "period", w.Label, "err", err)
		return nil, false
	}
	if !found || row.TotalMessages != total {
		return nil, false
	}
	names := make(map[string]string, len(s.channels))
	for _, ch := range s.channels {
		names[ch.ID] = ch.Name
	}
	for i := range channels {
		if n, ok := names[channels[i].ChannelID]; ok {
			channels[i].Name = n
		}
	}
	return channels, true
}

// CountChannels counts the messages of [from, to) in each of the server's channels that can hold
// some there, the server's total being total: a channel created after the window, or one that
// answered 403 less than a day before now (with the permission overwrites it has now), is left
// out without a request; with total 0 every other channel is 0 without a request; otherwise each
// is searched, PerServer at once. A 403 or 404 leaves the channel out (a 403 is remembered); any
// other error fails the whole count and stops its other requests. The rows carry the guild,
// channel and name (no period); requests is how many searches were sent, also on an error.
func (c *Collector) CountChannels(ctx context.Context, guildID string, channels []discord.Channel, from, to time.Time,
	total int64, now time.Time) (rows []reports.ChannelRow, requests int64, err error) {
	var asked []discord.Channel
	for _, ch := range channels {
		if createdBefore(ch.ID, to) && !c.isForbidden(ch, now) {
			asked = append(asked, ch)
		}
	}
	if total == 0 {
		rows = make([]reports.ChannelRow, 0, len(asked))
		for _, ch := range asked {
			rows = append(rows, reports.ChannelRow{GuildID: guildID, ChannelID: ch.ID, Name: ch.Name})
		}
		return rows, 0, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		sent     atomic.Int64
	)
	counts := make([]int64, len(asked))
	skipped := make([]bool, len(asked))
	limited(wctx, c.cfg.PerServer, asked, func(i int, ch discord.Channel) {
		sent.Add(1)
		n, err := c.cfg.Discord.CountMessages(wctx, guildID, ch.ID, from, to)
		switch {
		case err == nil:
			counts[i] = n
		case errors.Is(err, discord.ErrForbidden) || errors.Is(err, discord.ErrNotFound):
			// No access to this channel (or it was deleted since the listing): skip it.
			c.log.Debug("channel skipped", "guild_id", guildID, "channel_id", ch.ID, "err", err)
			skipped[i] = true
			if errors.Is(err, discord.ErrForbidden) {
				c.markForbidden(ch, c.cfg.Now())
			}
		default:
			mu.Lock()
			// The first failure stops the others; a 401 among them is what the pass needs.
			if firstErr == nil || (errors.Is(err, discord.ErrUnauthorized) && !errors.Is(firstErr, discord.ErrUnauthorized)) {
				firstErr = err
			}
			mu.Unlock()
			cancel()
		}
	})
	if firstErr != nil {
		return nil, sent.Load(), firstErr
	}
	if err := wctx.Err(); err != nil {
		return nil, sent.Load(), err
	}
	rows = make([]reports.ChannelRow, 0, len(asked))
	for i, ch := range asked {
		if !skipped[i] {
			rows = append(rows, reports.ChannelRow{GuildID: guildID, ChannelID: ch.ID, Name: ch.Name, Messages: counts[i]})
		}
	}
	return rows, sent.Load(), nil
}

// isForbidden tells whether ch answered 403 less than forbiddenFor before now with the same
// permission overwrites it has now.
func (c *Collector) isForbidden(ch discord.Channel, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.forbidden[ch.ID]
	if !ok {
		return false
	}
	if now.Sub(m.at) >= forbiddenFor || m.overwrites != ch.Overwrites {
		delete(c.forbidden, ch.ID)
		return false
	}
	return true
}

func (c *Collector) markForbidden(ch discord.Channel, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forbidden[ch.ID] = forbiddenMark{at: at, overwrites: ch.Overwrites}
}

var errStore = errors.New("the report could not be written")

// createdBefore tells whether the snowflake id was generated before t (an id that does not
// parse is taken as old, so that its channel is counted).
func createdBefore(id string, t time.Time) bool {
	v, err := strconv.ParseUint(id, 10, 64)
	return err != nil || discord.SnowflakeTime(v).Before(t)
}

// failWindow records that w could not be refreshed and marks its earlier report stale.
func (r *run) failWindow(ctx context.Context, log *slog.Logger, guildID string, w reports.Window, err error) {
	code, message := Classify(err)
	if errors.Is(err, errStore) {
		code = CodeStoreError
	}
	f := Failure{GuildID: guildID, Kind: w.Kind, Period: w.Label, Code: code, Message: message}
	marked, merr := r.c.cfg.Store.MarkStale(ctx, w.Kind, guildID, w.Label, code, message)
	if merr != nil {
		log.Error("cannot mark report stale", "kind", w.Kind.String(), "period", w.Label, "err", merr)
	}
	f.Stale = marked
	if marked {
		metricReports.WithLabelValues(w.Kind.String(), "stale").Inc()
	}
	log.Warn("report not refreshed", "kind", w.Kind.String(), "period", w.Label, "code", code, "err", err, "marked_stale", marked)
	r.fail(f)
}
