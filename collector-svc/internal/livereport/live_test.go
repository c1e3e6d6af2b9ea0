package livereport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/collector-svc/internal/store"
	"forumstats.local/shared/migrate/migratetest"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) { testutil.Run(m) }

var ctx = context.Background()

// both runs fn against a fresh PostgreSQL database and a fresh SQLite file.
func both(t *testing.T, fn func(t *testing.T, gdb *gorm.DB)) {
	migratetest.Dialects(t, reports.Migrations, fn)
}

// rig is one collector process counting the fake's one server live: the events of the fake's
// messages are fed by hand to an Accumulator and Flusher (no gateway connection), in the order of
// their snowflakes, with the clock at each message's time.
type rig struct {
	t        *testing.T
	clock    *testutil.Clock
	fake     *fakediscord.Server
	failing  atomic.Bool // searches answer 503
	client   *discord.Client
	entries  []fakediscord.CatalogEntry // the fake's servers, all in the catalog; the first is counted live
	reports  *store.Store
	lstore   *live.Store
	flusher  *live.Flusher
	rep      *Reporter
	guild    uint64
	guildID  string
	listed   []discord.Channel // the message-bearing channels /channels lists
	channels []live.Channel    // every channel and thread, for GUILD_CREATE
	seq      int64
	fedTo    time.Time // messages before this were fed
}

func newRig(t *testing.T, gdb *gorm.DB, start time.Time) *rig {
	t.Helper()
	return newRigOf(t, gdb, start, 1)
}

// newRigOf is a rig whose fake has guilds servers, all in the catalog; only the first is counted
// live.
func newRigOf(t *testing.T, gdb *gorm.DB, start time.Time, guilds int) *rig {
	t.Helper()
	r := &rig{t: t, clock: testutil.NewClock(start)}
	r.fake = fakediscord.New(fakediscord.Options{Seed: 7, Guilds: guilds, Clock: r.clock.Now})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.failing.Load() && strings.HasSuffix(req.URL.Path, "/messages/search") {
			http.Error(w, `{"message": "unavailable", "code": 0}`, http.StatusServiceUnavailable)
			return
		}
		r.fake.Handler().ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	client := discord.New(discord.Config{BaseURL: srv.URL + "/api/v10", GlobalRate: 1000, MaxRetries: 1,
		BackoffMin: time.Millisecond, BackoffMax: 2 * time.Millisecond})
	r.client = client
	r.reports = store.New(gdb, nil, nil)
	entries := r.fake.Catalog()
	r.entries = entries
	r.guildID = entries[0].GuildID
	r.guild, _ = strconv.ParseUint(r.guildID, 10, 64)
	var cat []catalog.Entry
	for i, e := range entries {
		cat = append(cat, catalog.Entry{Number: i + 1, Name: e.Name, GuildID: e.GuildID})
	}
	if err := r.reports.SyncCatalog(ctx, cat); err != nil {
		t.Fatal(err)
	}
	all, err := client.Channels(ctx, r.guildID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, ch := range all {
		id, _ := strconv.ParseUint(ch.ID, 10, 64)
		seen[id] = true
		r.channels = append(r.channels, live.Channel{ID: id, Name: ch.Name})
		if discord.MessageBearing(ch.Type) {
			r.listed = append(r.listed, ch)
		}
	}
	// The threads are the channels of messages that /channels does not list.
	msgs, err := r.fake.Messages(r.guildID, "", start.Add(-30*24*time.Hour), start, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if !seen[m.ChannelID] {
			seen[m.ChannelID] = true
			r.channels = append(r.channels, live.Channel{ID: m.ChannelID, Name: "thread", Thread: true})
		}
	}
	r.lstore = live.NewStore(gdb)
	st, err := r.lstore.Load(ctx, 0, 1, start.Add(-60*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	acc := live.NewAccumulator(0, 1, st)
	r.rep = New(Config{
		Discord: client, Channels: collect.New(collect.Config{Discord: client, Now: r.clock.Now}), Live: r.lstore,
		Reports: r.reports, GapDelay: 2 * time.Minute, SearchEvery: 24 * time.Hour, Now: r.clock.Now,
	})
	r.flusher = live.NewFlusher(acc, afterFlush{r}, r.clock.Now, nil)
	return r
}

// afterFlush stores a batch, then tells the reporter, as the app's shard owner does.
type afterFlush struct{ r *rig }

func (a afterFlush) Flush(ctx context.Context, b live.Batch) error {
	if err := a.r.lstore.Flush(ctx, b); err != nil {
		return err
	}
	a.r.rep.AfterFlush(Flush{Shard: 0, NumShards: 1, Flusher: a.r.flusher, Batch: &b})
	return nil
}

func (r *rig) apply(ev live.Event) {
	r.seq++
	ev.Seq, ev.Shard = r.seq, 0
	r.flusher.Apply(ev)
}

// ready starts a session at the clock's time (as a new READY does: seq 1).
func (r *rig) ready(session string) {
	r.seq = 0
	r.apply(live.Event{Type: live.TypeReady, SessionID: session, ResumeURL: "wss://resume"})
}

func (r *rig) guildCreate() {
	r.apply(live.Event{Type: live.TypeGuildCreate, GuildID: r.guild, Channels: r.channels})
}

// messages are the fake's messages stamped in [from, to), oldest first.
func (r *rig) messages(from, to time.Time) []fakediscord.Message {
	r.t.Helper()
	saved := r.clock.Now()
	r.clock.Set(to) // the fake hides messages after its clock
	ms, err := r.fake.Messages(r.guildID, "", from, to, 1<<20)
	r.clock.Set(saved)
	if err != nil {
		r.t.Fatal(err)
	}
	slices.Reverse(ms)
	return ms
}

// create delivers MESSAGE_CREATE of m, the clock at its time.
func (r *rig) create(m fakediscord.Message) {
	if at := time.UnixMilli(m.Ms).UTC(); at.After(r.clock.Now()) {
		r.clock.Set(at)
	}
	r.apply(live.Event{Type: live.TypeMessageCreate, GuildID: r.guild, ChannelID: m.ChannelID, IDs: []uint64{m.ID}})
}

// feed delivers every message stamped in [r.fedTo, to), then sets the clock to to.
func (r *rig) feed(to time.Time) {
	for _, m := range r.messages(r.fedTo, to) {
		r.create(m)
	}
	r.fedTo = to
	r.clock.Set(to)
}

// remove deletes m at the fake and, with event, delivers its MESSAGE_DELETE.
func (r *rig) remove(m fakediscord.Message, event bool) {
	r.t.Helper()
	if err := r.fake.Delete(m.ChannelID, m.ID); err != nil {
		r.t.Fatal(err)
	}
	if event {
		r.apply(live.Event{Type: live.TypeMessageDelete, GuildID: r.guild, ChannelID: m.ChannelID, IDs: []uint64{m.ID}})
	}
}

func (r *rig) flush() {
	r.t.Helper()
	if err := r.flusher.Flush(ctx); err != nil {
		r.t.Fatal(err)
	}
}

// requests is how many requests the fake has received.
func (r *rig) requests() int64 { return r.fake.Stats().Requests }

// report reads a stored report; it must exist.
func (r *rig) report(kind reports.Kind, period string) (reports.Row, []reports.ChannelRow) {
	r.t.Helper()
	return r.reportOf(r.guildID, kind, period)
}

func (r *rig) reportOf(guildID string, kind reports.Kind, period string) (reports.Row, []reports.ChannelRow) {
	r.t.Helper()
	row, chans, found, err := r.reports.Report(ctx, kind, guildID, period)
	if err != nil || !found {
		r.t.Fatalf("report of %s %s %s: found %v, err %v", guildID, kind, period, found, err)
	}
	return row, chans
}

// exact checks that the stored report of w is ok and holds what the fake counts now: the server's
// total and each listed channel's.
func (r *rig) exact(w reports.Window) {
	r.t.Helper()
	r.exactOf(r.guildID, len(r.listed), w)
}

// exactOf checks the stored report of w of the server guildID, which lists listed channels.
func (r *rig) exactOf(guildID string, listed int, w reports.Window) {
	r.t.Helper()
	row, chans := r.reportOf(guildID, w.Kind, w.Label)
	if row.Status != reports.StatusOK {
		r.t.Errorf("%s %s %s: status %s (%v), want ok", guildID, w.Kind, w.Label, row.Status, deref(row.ErrorMessage))
	}
	if want := r.fake.Count(guildID, "", w.From, w.To); row.TotalMessages != want || want == 0 {
		r.t.Errorf("%s %s %s: total %d, the fake counts %d", guildID, w.Kind, w.Label, row.TotalMessages, want)
	}
	if len(chans) != listed {
		r.t.Errorf("%s %s %s: %d channels, want %d", guildID, w.Kind, w.Label, len(chans), listed)
	}
	for _, c := range chans {
		if want := r.fake.Count(guildID, c.ChannelID, w.From, w.To); c.Messages != want {
			r.t.Errorf("%s %s: channel %s has %d, the fake counts %d", w.Kind, w.Label, c.ChannelID, c.Messages, want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestReportsFromLiveCounts follows one server over three days: counting begins late on the
// first, a session lost on the second leaves a gap whose edges hold messages, the second closes
// with the live total equal to the search's, the third closes with a deletion the gateway never
// told, and a gap on the fourth cannot be searched for a while.
func TestReportsFromLiveCounts(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		day := reports.Day{Year: 2026, Month: time.November, Day: 19}
		since := day.Start().Add(22*time.Hour + 17*time.Minute + 123*time.Millisecond)
		r := newRig(t, gdb, since)
		r.ready("s1")
		r.guildCreate()
		r.fedTo = since

		// (a) Live counts, then a gap whose first and last messages lie exactly on its edges.
		d2 := day.AddDays(1)
		d2msgs := r.messages(d2.Start().Add(10*time.Hour), d2.Start().Add(13*time.Hour))
		if len(d2msgs) < 10 {
			t.Fatalf("only %d messages between 10:00 and 13:00", len(d2msgs))
		}
		first, last := d2msgs[2], d2msgs[len(d2msgs)-3]
		gapFrom, gapTo := time.UnixMilli(first.Ms).UTC(), time.UnixMilli(last.Ms).UTC()
		r.feed(gapFrom) // every message before the gap's first
		r.flush()       // stored at the first message's millisecond: the gap starts there
		r.clock.Set(gapTo)
		r.ready("s2")
		r.guildCreate()
		// A message of the gap delivered late is search's, not counted live; one deleted before the
		// gap is searched is not subtracted either (the search does not see it).
		r.create(first)
		gone := d2msgs[4]
		r.remove(gone, true)
		r.fedTo = gapTo // the gap's messages were never delivered
		counted := r.messages(d2.Start(), d2.Start().Add(time.Hour))[0]
		r.feed(gapTo.Add(10 * time.Minute))
		r.remove(counted, true) // a counted message's deletion subtracts
		r.flush()

		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatalf("Flushed before the gap is due: %v", err)
		}
		row, _ := r.report(reports.KindDay, d2.String())
		if row.Status != reports.StatusStale || deref(row.ErrorCode) != collect.CodeGapNotFilled {
			t.Fatalf("with a gap not filled: status %s code %q, want stale gap_not_filled", row.Status, deref(row.ErrorCode))
		}
		if gaps, err := r.lstore.UnfilledGaps(ctx, day.Start()); err != nil || len(gaps) != 1 {
			t.Fatalf("unfilled gaps %v, %v; want the one", gaps, err)
		}
		// Once due, the gap is searched and filled with the next flush.
		r.feed(gapTo.Add(10*time.Minute + time.Second))
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		r.flush()
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		if gaps, err := r.lstore.UnfilledGaps(ctx, day.Start()); err != nil || len(gaps) != 0 {
			t.Fatalf("unfilled gaps after the fill %v, %v; want none", gaps, err)
		}
		r.exact(d2.Window())
		r.exact(d2.MonthOf().Window()) // the fake counts up to its clock

		// (b) The day closes with the live total equal to the search's: one request.
		r.feed(d2.End().Add(2*time.Minute + time.Second))
		r.flush()
		before := r.requests()
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		if n := r.requests() - before; n != 1 {
			t.Errorf("closing a day whose totals agree sent %d requests, want 1", n)
		}
		r.exact(d2.Window())
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		if n := r.requests() - before; n != 1 {
			t.Errorf("a closed day is checked once: %d requests, want 1", n)
		}

		// (c) A deletion the gateway never told: the totals differ at the close, and the channels
		// are searched.
		d3 := d2.AddDays(1)
		r.feed(d3.Start().Add(15 * time.Hour))
		r.remove(r.messages(d3.Start(), d3.Start().Add(15*time.Hour))[5], false)
		r.feed(d3.End().Add(-time.Minute))
		r.flush()
		if err := r.rep.Flushed(ctx); err != nil { // the day's searches are a day old: made again
			t.Fatal(err)
		}
		r.feed(d3.End().Add(2*time.Minute + time.Second))
		r.flush()
		before = r.requests()
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		if n, want := r.requests()-before, int64(1+len(r.listed)); n != want {
			t.Errorf("closing a day whose totals differ sent %d requests, want %d (the total, then each channel)", n, want)
		}
		r.exact(d3.Window())

		// (d) A gap whose search fails stays unfilled, and the report stale, until a search works.
		d4 := d3.AddDays(1)
		// This gap's edges are the other way round: the message just before it was counted live,
		// the gap's last millisecond holds a message.
		d4msgs := r.messages(d4.Start().Add(8*time.Hour), d4.Start().Add(10*time.Hour))
		before4, last4 := time.UnixMilli(d4msgs[1].Ms+1).UTC(), time.UnixMilli(d4msgs[len(d4msgs)-2].Ms+1).UTC()
		r.feed(before4)
		r.flush()
		r.clock.Set(last4)
		r.ready("s3")
		r.guildCreate()
		r.fedTo = last4
		r.feed(last4.Add(5 * time.Minute))
		r.flush()
		r.failing.Store(true)
		if err := r.rep.Flushed(ctx); err == nil {
			t.Fatal("Flushed with searches failing: no error")
		}
		r.flush()
		before = r.requests()
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatalf("Flushed while the failed search waits: %v", err)
		}
		if n := r.requests() - before; n != 0 {
			t.Errorf("a failed search is tried again %d times at once, want after LIVE_GAP_DELAY", n)
		}
		if gaps, err := r.lstore.UnfilledGaps(ctx, day.Start()); err != nil || len(gaps) != 1 {
			t.Fatalf("after failed searches: unfilled gaps %v, %v; want the one", gaps, err)
		}
		row, _ = r.report(reports.KindDay, d4.String())
		if row.Status != reports.StatusStale || deref(row.ErrorCode) != collect.CodeGapNotFilled {
			t.Fatalf("with the gap's search failing: status %s code %q, want stale gap_not_filled", row.Status, deref(row.ErrorCode))
		}
		r.failing.Store(false)
		r.clock.Add(3 * time.Minute) // past the retry delay
		r.feed(r.clock.Now())
		r.flush()
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		r.flush()
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		r.exact(d4.Window())
	})
}
