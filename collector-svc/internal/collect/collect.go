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
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
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
	// Concurrency is how many servers are collected at once (default 4): the client's global
	// rate limit is the real throttle, this only keeps several per-guild buckets busy.
	Concurrency int
	Now         func() time.Time // default time.Now
	Logger      *slog.Logger
}

// Collector runs passes.
type Collector struct {
	cfg Config
	log *slog.Logger
}

// New returns a Collector for cfg.
func New(cfg Config) *Collector {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
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
	return &Collector{cfg: cfg, log: cfg.Logger}
}

// ErrPassFailed is wrapped by the error of a pass that did not refresh everything.
var ErrPassFailed = errors.New("collection pass failed")

// Result sums up a pass.
type Result struct {
	Start, Finish time.Time
	Servers       int
	Written       int       // reports written whole
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
	r := &run{c: c, res: &res, windows: reports.ForPass(start)}
	err := r.do(ctx)
	res.Finish = c.cfg.Now()
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
	c       *Collector
	res     *Result
	windows []reports.Window

	mu      sync.Mutex
	aborted error // the 401 that stopped the pass
}

func (r *run) do(ctx context.Context) error {
	if err := r.c.SyncCatalogFile(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The catalog stored at the last good read stands; the pass still collects it.
		r.fail(Failure{Code: "catalog_error", Message: err.Error()})
	}
	servers, err := r.c.cfg.Store.Catalog(ctx)
	if err != nil {
		return err
	}
	r.res.Servers = len(servers)

	// Discord calls stop at once on a 401; writes (stale marks) still go through on ctx.
	discordCtx, stopDiscord := context.WithCancel(ctx)
	defer stopDiscord()
	sem := make(chan struct{}, r.c.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, srv := range servers {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.server(ctx, discordCtx, stopDiscord, srv)
		}()
	}
	wg.Wait()
	return ctx.Err()
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

// server collects one server: metadata, channels, then each window.
func (r *run) server(ctx, dctx context.Context, stopDiscord context.CancelFunc, srv catalog.Entry) {
	log := r.c.log.With("guild_id", srv.GuildID, "number", srv.Number)
	d, st := r.c.cfg.Discord, r.c.cfg.Store

	windows := r.regular()
	// failAll marks every window of the server stale with err's code; backfill days are
	// missing by definition, so only the regular windows can be marked.
	failAll := func(err error) {
		for _, w := range windows {
			r.failWindow(ctx, log, srv.GuildID, w, err)
		}
	}
	if err := r.abortErr(); err != nil {
		failAll(err)
		return
	}
	g, err := d.Guild(dctx, srv.GuildID)
	if err != nil {
		failAll(r.discordErr(ctx, err, stopDiscord))
		return
	}
	if err := st.SaveGuild(ctx, srv.GuildID, g.Icon, g.Banner, r.c.cfg.Now()); err != nil {
		log.Error("cannot save guild metadata", "err", err)
		r.fail(Failure{GuildID: srv.GuildID, Code: CodeStoreError, Message: "could not save guild metadata"})
	}
	all, err := d.Channels(dctx, srv.GuildID)
	if err != nil {
		failAll(r.discordErr(ctx, err, stopDiscord))
		return
	}
	var channels []discord.Channel
	for _, ch := range all {
		if discord.MessageBearing(ch.Type) {
			channels = append(channels, ch)
		}
	}
	backfill, err := r.backfill(ctx, srv.GuildID)
	if err != nil {
		log.Error("cannot read which days are missing; not backfilling", "err", err)
	}
	windows = append(windows, backfill...)
	for i, w := range windows {
		if err := r.window(ctx, dctx, srv.GuildID, channels, w); err != nil {
			err = r.discordErr(ctx, err, stopDiscord)
			if ctx.Err() != nil {
				return // shutdown: nothing failed, the pass just stops
			}
			if errors.Is(err, discord.ErrUnauthorized) {
				for _, rest := range windows[i:] {
					r.failWindow(ctx, log, srv.GuildID, rest, err)
				}
				return
			}
			r.failWindow(ctx, log, srv.GuildID, w, err)
		}
	}
	log.Debug("server collected", "channels", len(channels), "windows", len(windows))
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

// window counts one window and writes its report whole.
func (r *run) window(ctx, dctx context.Context, guildID string, channels []discord.Channel, w reports.Window) error {
	d := r.c.cfg.Discord
	total, err := d.CountMessages(dctx, guildID, "", w.From, w.To)
	if err != nil {
		return err
	}
	row := reports.Row{GuildID: guildID, Period: w.Label, Status: reports.StatusOK, TotalMessages: total}
	counts := make([]reports.ChannelRow, 0, len(channels))
	for _, ch := range channels {
		// A channel created after the window had no message in it: no request needed.
		if !createdBefore(ch.ID, w.To) {
			continue
		}
		n, err := d.CountMessages(dctx, guildID, ch.ID, w.From, w.To)
		if errors.Is(err, discord.ErrForbidden) || errors.Is(err, discord.ErrNotFound) {
			// No access to this channel (or it was deleted since the listing): skip it.
			r.c.log.Debug("channel skipped", "guild_id", guildID, "channel_id", ch.ID, "err", err)
			continue
		}
		if err != nil {
			return err
		}
		counts = append(counts, reports.ChannelRow{GuildID: guildID, Period: w.Label, ChannelID: ch.ID, Name: ch.Name, Messages: n})
	}
	row.GeneratedAt = r.c.cfg.Now()
	if err := r.c.cfg.Store.SaveReport(ctx, w.Kind, row, counts); err != nil {
		r.c.log.Error("cannot write report", "guild_id", guildID, "kind", w.Kind.String(), "period", w.Label, "err", err)
		return errStore
	}
	metricReports.WithLabelValues(w.Kind.String(), "ok").Inc()
	r.mu.Lock()
	r.res.Written++
	r.mu.Unlock()
	return nil
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
	code, message := classify(err)
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
