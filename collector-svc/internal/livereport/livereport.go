// Package livereport turns live counts into reports: it searches the gaps live counting left
// (once Discord's search index has caught up with them), writes today's and this month's reports
// of the servers whose counts changed at each flush, and checks each day as it closes against one
// search of the server's total. The rules of what to search and how to add it up are pure
// (plan.go); Reporter runs them over the live store, the Discord search and the report store.
package livereport

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
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
)

// DefaultGapDelay is LIVE_GAP_DELAY's default: how long after a gap ends (or a day closes) its
// search waits, so that Discord's search index holds the messages of its last moments.
const DefaultGapDelay = 2 * time.Minute

// Discord is what reports need of the Discord client.
type Discord interface {
	Channels(ctx context.Context, guildID string) ([]discord.Channel, error)
	// CountMessages counts the messages of [from, to); channelID "" counts the whole server.
	CountMessages(ctx context.Context, guildID, channelID string, from, to time.Time) (int64, error)
}

// ChannelCounter counts a window's channels by the search collector's rules (collect.Collector).
type ChannelCounter interface {
	CountChannels(ctx context.Context, guildID string, channels []discord.Channel, from, to time.Time,
		total int64, now time.Time) ([]reports.ChannelRow, int64, error)
}

// LiveStore is what reports read of live counting (live.Store).
type LiveStore interface {
	Coverage(ctx context.Context, guild uint64) (live.Coverage, bool, error)
	// Sums adds up the stored counts of the hours [from, to) per channel, the total under 0.
	Sums(ctx context.Context, guild uint64, from, to int64) (map[uint64]int64, error)
	UnfilledGaps(ctx context.Context, from time.Time) ([]live.GuildGap, error)
}

// ReportStore is where reports are written (store.Store: every write bumps the data generation).
type ReportStore interface {
	Catalog(ctx context.Context) ([]catalog.Entry, error)
	SaveReport(ctx context.Context, kind reports.Kind, r reports.Row, channels []reports.ChannelRow) error
	MarkStale(ctx context.Context, kind reports.Kind, guildID, period, code, message string) (bool, error)
}

// Filler adds a gap's search counts to live counting: the shard flusher of the server. Owns
// says whether this process counts the server (its shard runs here): only that process fills its
// gaps and writes its reports.
type Filler interface {
	Owns(guild uint64) bool
	Fill(guild uint64, gap live.Gap, counts map[live.Key]int64) error
}

// Flush is a shard's stored flush, as the app tells it after its transaction committed.
type Flush struct {
	Shard, NumShards int
	// Flusher is the shard's: the fills of its servers' gaps go to its next flush.
	Flusher *live.Flusher
	// Batch is what the flush stored. Nil when the app does not know it: every catalog server of
	// the shard is then taken as changed (its reports written at every flush).
	Batch *live.Batch
}

// shards is the Filler of the shards this process flushes, learned from AfterFlush: a shard
// not heard of for heldFor has gone to another process (its lock was lost or let go).
type shards struct {
	mu        sync.Mutex
	numShards int
	held      map[int]heldShard
	now       func() time.Time
	heldFor   time.Duration
}

type heldShard struct {
	fl   *live.Flusher
	seen time.Time
}

func (s *shards) heard(f Flush) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.NumShards != s.numShards {
		// The shard count changed: every shard's servers are others now.
		s.numShards, s.held = f.NumShards, map[int]heldShard{}
	}
	s.held[f.Shard] = heldShard{fl: f.Flusher, seen: s.now()}
}

func (s *shards) flusher(guild uint64) *live.Flusher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.numShards <= 0 {
		return nil
	}
	h, ok := s.held[int((guild>>22)%uint64(s.numShards))]
	if !ok || h.fl == nil || s.now().Sub(h.seen) >= s.heldFor {
		return nil
	}
	return h.fl
}

// Owns reports whether the server's shard is flushed here.
func (s *shards) Owns(guild uint64) bool { return s.flusher(guild) != nil }

// Fill hands the fill to the server's shard flusher, written with its next flush.
func (s *shards) Fill(guild uint64, gap live.Gap, counts map[live.Key]int64) error {
	f := s.flusher(guild)
	if f == nil {
		return fmt.Errorf("%w: the shard of server %d is not flushed here", live.ErrFill, guild)
	}
	return f.Fill(guild, gap, counts)
}

// Config configures a Reporter.
type Config struct {
	Discord  Discord
	Channels ChannelCounter
	Live     LiveStore
	Reports  ReportStore
	// Filler, when set, replaces the shards learned from AfterFlush (tests).
	Filler Filler
	// GapDelay is LIVE_GAP_DELAY (default DefaultGapDelay).
	GapDelay time.Duration
	// SearchEvery is how long the search of the hours before a server's counting began, and its
	// channel list, are reused (default 10 minutes, the search collector's refresh): they are
	// searched again at that pace, not at every flush.
	SearchEvery time.Duration
	Now         func() time.Time // default time.Now
	Logger      *slog.Logger
}

// Reporter writes reports from live counts. Its methods may be called from several goroutines;
// its steps run one at a time.
type Reporter struct {
	cfg Config
	log *slog.Logger

	step sync.Mutex // one Flushed at a time

	mu      sync.Mutex
	changed map[uint64]bool // servers whose counts changed since their reports were written
	// shards of which every server is taken as changed: flushes heard of without their batch.
	changedShards map[[2]int]bool // shard, number of shards
	notify        chan struct{}
	held          *shards

	// Held by step.
	channels map[string]cachedChannels
	spans    map[spanKey]cachedSpan
	// When a fill was handed over (not searched again until stored, or GapDelay without it: the
	// flusher let the shard go), and when the filler refused one (not searched again for
	// SearchEvery).
	pending, refused map[live.GuildGap]time.Time
	closed           map[uint64]reports.Day // the last day checked at its close, by server
	// A server whose report write or day close failed is tried again from then.
	retryWrite, retryClose map[uint64]time.Time
	// When each server's today's and this month's reports were last written here.
	written   map[uint64]time.Time
	failedGap map[live.GuildGap]time.Time // a gap whose search failed is searched again from then
}

type cachedChannels struct {
	list []discord.Channel
	at   time.Time
}

type spanKey struct {
	guild    string
	from, to int64 // Unix milliseconds
}

type cachedSpan struct {
	count spanCount
	at    time.Time
}

// New returns a Reporter for cfg.
func New(cfg Config) *Reporter {
	if cfg.GapDelay <= 0 {
		cfg.GapDelay = DefaultGapDelay
	}
	if cfg.SearchEvery <= 0 {
		cfg.SearchEvery = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Reporter{
		cfg: cfg, log: cfg.Logger,
		changed: map[uint64]bool{}, notify: make(chan struct{}, 1),
		channels: map[string]cachedChannels{}, spans: map[spanKey]cachedSpan{},
		pending: map[live.GuildGap]time.Time{}, refused: map[live.GuildGap]time.Time{},
		changedShards: map[[2]int]bool{},
		closed:        map[uint64]reports.Day{}, retryWrite: map[uint64]time.Time{}, retryClose: map[uint64]time.Time{},
		failedGap: map[live.GuildGap]time.Time{}, written: map[uint64]time.Time{},
	}
	// A shard flushes every few seconds; one not heard of for GapDelay is no longer here.
	r.held = &shards{now: cfg.Now, heldFor: cfg.GapDelay, held: map[int]heldShard{}}
	if r.cfg.Filler == nil {
		r.cfg.Filler = r.held
	}
	return r
}

// Note records that the counts of the servers changed: their reports are written at the next
// Flushed.
func (r *Reporter) Note(guilds ...uint64) {
	if len(guilds) == 0 {
		return
	}
	r.mu.Lock()
	for _, g := range guilds {
		r.changed[g] = true
	}
	r.mu.Unlock()
	r.wake()
}

// takeChanged returns the servers noted and the shards whose servers all are, and forgets them.
func (r *Reporter) takeChanged() ([]uint64, [][2]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]uint64, 0, len(r.changed))
	for g := range r.changed {
		out = append(out, g)
	}
	clear(r.changed)
	sh := make([][2]int, 0, len(r.changedShards))
	for k := range r.changedShards {
		sh = append(sh, k)
	}
	clear(r.changedShards)
	return out, sh
}

// keep puts servers back among the changed without waking Run: they are written at a later step.
func (r *Reporter) keep(guilds []uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range guilds {
		r.changed[g] = true
	}
}

// AfterFlush hears of a shard's stored flush: it notes the servers whose counts the batch changed
// (messages, fills, new gaps, counting begun) and the shard's flusher, and wakes Run. It does no
// I/O and returns at once, so that it may run on the shard's flush loop.
func (r *Reporter) AfterFlush(f Flush) {
	r.held.heard(f)
	if f.Batch == nil {
		r.mu.Lock()
		r.changedShards[[2]int{f.Shard, f.NumShards}] = true
		r.mu.Unlock()
		r.wake()
		return
	}
	r.Note(batchGuilds(*f.Batch)...)
}

func (r *Reporter) wake() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Flushed is the step run after a flush: it fills the gaps that are due, writes today's and this
// month's reports of the servers noted since the last step, and checks the days that closed.
// Every part runs even when another failed; the errors are joined.
func (r *Reporter) Flushed(ctx context.Context) error {
	r.step.Lock()
	defer r.step.Unlock()
	return errors.Join(r.fillGaps(ctx), r.writeChanged(ctx), r.closeDays(ctx))
}

// Run runs Flushed whenever a stored batch changed counts, and at least every tick (so that gaps
// are searched once due and days checked once closed), until ctx ends.
func (r *Reporter) Run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.notify:
		case <-t.C:
		}
		if err := r.Flushed(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("live reports: step failed, tried again at the next", "err", err)
		}
	}
}

// catalogGuilds is the catalog's servers that this process counts, by id.
func (r *Reporter) catalogGuilds(ctx context.Context) (map[uint64]string, error) {
	entries, err := r.cfg.Reports.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]string, len(entries))
	for _, e := range entries {
		g, err := strconv.ParseUint(e.GuildID, 10, 64)
		if err == nil && r.cfg.Filler.Owns(g) {
			out[g] = e.GuildID
		}
	}
	return out, nil
}

// channelList is the server's message-bearing channels, read again every SearchEvery.
func (r *Reporter) channelList(ctx context.Context, guildID string) ([]discord.Channel, error) {
	now := r.cfg.Now()
	if c, ok := r.channels[guildID]; ok && now.Sub(c.at) < r.cfg.SearchEvery {
		return c.list, nil
	}
	all, err := r.cfg.Discord.Channels(ctx, guildID)
	if err != nil {
		return nil, err
	}
	var list []discord.Channel
	for _, ch := range all {
		if discord.MessageBearing(ch.Type) {
			list = append(list, ch)
		}
	}
	r.channels[guildID] = cachedChannels{list: list, at: now}
	return list, nil
}

func (r *Reporter) keepShards(sh [][2]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range sh {
		r.changedShards[k] = true
	}
}
