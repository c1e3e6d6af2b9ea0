package collect_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/collector-svc/internal/livereport"
	"forumstats.local/collector-svc/internal/store"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

// killWorld is a gateway-mode day over the fake Discord's servers, driven step by step on a
// manual clock: each shard's dispatches (READY, GUILD_CREATE, then every message in the order of
// its snowflake) are logged with their sequence numbers as the gateway would send them, and the
// replica holding the shard applies them to its flusher, flushes into the reports database (live
// store), and tells its reporter of live counts; the writer's pass runs every 10 minutes.
type killWorld struct {
	t       *testing.T
	clock   *testutil.Clock
	fake    *fakediscord.Server
	client  *discord.Client
	lstore  *live.Store
	reports *store.Store
	guilds  []fakediscord.Guild
	shards  int
	log     map[int][]live.Event // per shard, event i has sequence number i+1
	fedTo   time.Time
	threads map[uint64][]live.Channel // per server, its threads (channels /channels does not list)
}

// replica is one collector process: the shards it holds (their flushers and how far each has
// been delivered) and its reporter.
type replica struct {
	w         *killWorld
	rep       *livereport.Reporter
	flushers  map[int]*live.Flusher
	delivered map[int]int
}

// hook stores a shard's batch, then tells the replica's reporter, as serve's flush hook does.
type hook struct {
	r     *replica
	shard int
}

func (h hook) Flush(ctx context.Context, b live.Batch) error {
	if err := h.r.w.lstore.Flush(ctx, b); err != nil {
		return err
	}
	h.r.rep.AfterFlush(livereport.Flush{Shard: h.shard, NumShards: h.r.w.shards, Flusher: h.r.flushers[h.shard], Batch: &b})
	return nil
}

func (w *killWorld) newReplica(pass *collect.Collector) *replica {
	r := &replica{w: w, flushers: map[int]*live.Flusher{}, delivered: map[int]int{}}
	r.rep = livereport.New(livereport.Config{Discord: w.client, Channels: pass, Live: w.lstore, Reports: w.reports,
		GapDelay: livereport.DefaultGapDelay, SearchEvery: 10 * time.Minute, Now: w.clock.Now})
	return r
}

// take makes r hold shard: its state loaded from the stored checkpoint, its session resumed (the
// dispatches after the checkpoint's sequence number replayed), as a replica that takes a lock.
func (r *replica) take(shard int) {
	r.w.t.Helper()
	st, err := r.w.lstore.Load(context.Background(), shard, r.w.shards, reports.MonthOf(r.w.clock.Now()).AddMonths(-1).Start())
	if err != nil {
		r.w.t.Fatal(err)
	}
	acc := live.NewAccumulator(shard, r.w.shards, st)
	r.flushers[shard] = live.NewFlusher(acc, hook{r, shard}, r.w.clock.Now, nil)
	r.delivered[shard] = int(st.Checkpoint.Seq)
}

// deliver applies every dispatch of its shards logged and not yet applied.
func (r *replica) deliver() {
	for shard, fl := range r.flushers {
		for _, ev := range r.w.log[shard][r.delivered[shard]:] {
			fl.Apply(ev)
		}
		r.delivered[shard] = len(r.w.log[shard])
	}
}

func (r *replica) flush() {
	r.w.t.Helper()
	shards := mapsKeys(r.flushers)
	slices.Sort(shards)
	for _, shard := range shards {
		if err := r.flushers[shard].Flush(context.Background()); err != nil {
			r.w.t.Fatal(err)
		}
	}
	if err := r.rep.Flushed(context.Background()); err != nil {
		r.w.t.Fatal(err)
	}
}

func mapsKeys(m map[int]*live.Flusher) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (w *killWorld) shardOf(g fakediscord.Guild) int {
	id, _ := strconv.ParseUint(g.GuildID, 10, 64)
	return int((id >> 22) % uint64(w.shards))
}

func (w *killWorld) add(shard int, ev live.Event) {
	ev.Shard = shard
	ev.Seq = int64(len(w.log[shard]) + 1)
	w.log[shard] = append(w.log[shard], ev)
}

// messages are the fake's messages of the server stamped in [from, to), oldest first.
func (w *killWorld) messages(guildID string, from, to time.Time) []fakediscord.Message {
	w.t.Helper()
	saved := w.clock.Now()
	w.clock.Set(to) // the fake hides messages after its clock
	ms, err := w.fake.Messages(guildID, "", from, to, 1<<20)
	w.clock.Set(saved)
	if err != nil {
		w.t.Fatal(err)
	}
	slices.Reverse(ms)
	return ms
}

// connect logs READY and every server's GUILD_CREATE on each shard.
func (w *killWorld) connect() {
	for shard := range w.shards {
		w.add(shard, live.Event{Type: live.TypeReady, SessionID: "session-" + strconv.Itoa(shard), ResumeURL: "wss://resume"})
	}
	for _, g := range w.guilds {
		id, _ := strconv.ParseUint(g.GuildID, 10, 64)
		chans, err := w.client.Channels(context.Background(), g.GuildID)
		if err != nil {
			w.t.Fatal(err)
		}
		var all []live.Channel
		for _, ch := range chans {
			cid, _ := strconv.ParseUint(ch.ID, 10, 64)
			all = append(all, live.Channel{ID: cid, Name: ch.Name})
		}
		all = append(all, w.threads[id]...)
		w.add(w.shardOf(g), live.Event{Type: live.TypeGuildCreate, GuildID: id, Channels: all})
	}
}

// feed logs the MESSAGE_CREATE of every message stamped in [w.fedTo, to), in snowflake order per
// shard, and moves the clock to to.
func (w *killWorld) feed(to time.Time) {
	for _, g := range w.guilds {
		id, _ := strconv.ParseUint(g.GuildID, 10, 64)
		for _, m := range w.messages(g.GuildID, w.fedTo, to) {
			w.add(w.shardOf(g), live.Event{Type: live.TypeMessageCreate, GuildID: id, ChannelID: m.ChannelID, IDs: []uint64{m.ID}})
		}
	}
	w.fedTo = to
	w.clock.Set(to)
}

// TestSimulationDayReplicaKilled: a Moscow day of live counting over the fake's servers on two
// gateway shards held by two replicas, with the writer's pass every 10 minutes. At noon the
// replica holding shard 0 dies between flushes (the dispatches it applied since its last flush
// are lost with it); a minute later the other takes shard 0 from the stored checkpoint and
// resumes the session, the dispatches after the checkpoint replayed. At the day's end every
// server's live counts of the day, and its stored reports of the day and the month (written from
// live counts: the pass leaves them), equal the fake's counts: the death cost no count, and none
// was counted twice. Steps of 5 minutes (flush and reporter step each) keep the SQLite writes of a
// day within seconds.
func TestSimulationDayReplicaKilled(t *testing.T) {
	servers := 8
	if testing.Short() || collect.RaceEnabled {
		servers = 3 // SQLite under the race detector: 8 servers take over two minutes
	}
	ctx := context.Background()
	day := reports.Day{Year: 2026, Month: time.November, Day: 19}
	start := day.Start().Add(-time.Hour) // counting begins at 23:00 Moscow time the day before
	gdb := testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), "stats.db"))
	if _, err := migrate.Up(ctx, gdb, reports.Migrations); err != nil {
		t.Fatal(err)
	}
	w := &killWorld{t: t, clock: testutil.NewClock(start), shards: 2, log: map[int][]live.Event{}, fedTo: start,
		threads: map[uint64][]live.Channel{}}
	w.fake = fakediscord.New(fakediscord.Options{Seed: 5, Guilds: servers, Clock: w.clock.Now})
	srv := httptest.NewServer(w.fake.Handler())
	t.Cleanup(srv.Close)
	w.client = discord.New(discord.Config{BaseURL: srv.URL + "/api/v10", GlobalRate: 1000})
	w.lstore, w.reports = live.NewStore(gdb), store.New(gdb, nil, nil)
	w.guilds = w.fake.Guilds()
	var entries []catalog.Entry
	for i, g := range w.guilds {
		entries = append(entries, catalog.Entry{Number: i + 1, Name: g.Name, GuildID: g.GuildID})
		// The threads are the channels of messages that /channels does not list.
		listed := map[uint64]bool{}
		for _, c := range g.Channels {
			id, _ := strconv.ParseUint(c.ID, 10, 64)
			listed[id] = true
		}
		id, _ := strconv.ParseUint(g.GuildID, 10, 64)
		for _, m := range w.messages(g.GuildID, start.Add(-40*24*time.Hour), day.End().Add(time.Hour)) {
			if !listed[m.ChannelID] {
				listed[m.ChannelID] = true
				w.threads[id] = append(w.threads[id], live.Channel{ID: m.ChannelID, Name: "thread", Thread: true})
			}
		}
	}
	if err := w.reports.SyncCatalog(ctx, entries); err != nil {
		t.Fatal(err)
	}
	pass := collect.New(collect.Config{Discord: w.client, Store: w.reports, Live: w.lstore, LiveFresh: livereport.DefaultGapDelay,
		Now: w.clock.Now})
	perShard := map[int]int{}
	for _, g := range w.guilds {
		perShard[w.shardOf(g)]++
	}
	if perShard[0] == 0 || perShard[1] == 0 {
		t.Fatalf("servers per shard %v: the replica killed must hold some", perShard)
	}
	a, b := w.newReplica(pass), w.newReplica(pass)
	a.take(0)
	b.take(1)
	w.connect()

	const step = 5 * time.Minute
	noon := day.Start().Add(12 * time.Hour)
	killed := false
	var passes, liveWindows int
	nextPass := start
	// Past the day's end by LIVE_GAP_DELAY and a step: the reporter checks the closed day.
	for at := start.Add(step); !at.After(day.End().Add(livereport.DefaultGapDelay + step)); at = at.Add(step) {
		w.feed(at)
		if !killed && !at.Before(noon) {
			// A applies the dispatches of the last interval, then dies before flushing them.
			a.deliver()
			killed = true
			w.feed(at.Add(time.Minute))
			b.take(0)
			at = at.Add(time.Minute)
		}
		b.deliver()
		b.flush()
		if !killed {
			a.deliver()
			a.flush()
		}
		if !at.Before(nextPass) {
			nextPass = at.Add(10 * time.Minute)
			res, err := pass.Pass(ctx)
			if err != nil {
				t.Fatalf("pass at %s: %v", at, err)
			}
			passes++
			liveWindows += res.Live
		}
	}
	if !killed {
		t.Fatal("the replica was never killed")
	}
	t.Logf("%d servers, %d shards: %d dispatches; %d passes left %d windows to live counting; %d requests to the fake",
		servers, w.shards, len(w.log[0])+len(w.log[1]), passes, liveWindows, w.fake.Stats().Requests)
	if liveWindows < passes*2*servers*9/10 {
		t.Errorf("the passes left %d windows to live counting, want about 2 a server a pass (%d)", liveWindows, passes*2*servers)
	}

	// The messages fed are those before the clock: the fake counts up to its clock, included.
	w.clock.Set(w.fedTo.Add(-time.Millisecond))
	dayW, monthW := day.Window(), day.MonthOf().Window()
	for _, g := range w.guilds {
		id, _ := strconv.ParseUint(g.GuildID, 10, 64)
		sums, err := w.lstore.Sums(ctx, id, live.HourAt(dayW.From), live.HourAt(dayW.To))
		if err != nil {
			t.Fatal(err)
		}
		if want := w.fake.Count(g.GuildID, "", dayW.From, dayW.To); sums[0] != want || want == 0 {
			t.Errorf("server %s: %d messages counted live in the day, the fake made %d", g.GuildID, sums[0], want)
		}
		for _, win := range []reports.Window{dayW, monthW} {
			row, chans, found, err := w.reports.Report(ctx, win.Kind, g.GuildID, win.Label)
			if err != nil || !found {
				t.Fatalf("server %s %s %s: found %v, %v", g.GuildID, win.Kind, win.Label, found, err)
			}
			if want := w.fake.Count(g.GuildID, "", win.From, win.To); row.TotalMessages != want || row.Status != reports.StatusOK {
				t.Errorf("server %s %s %s: %s total %d, the fake counts %d", g.GuildID, win.Kind, win.Label, row.Status, row.TotalMessages, want)
			}
			if len(chans) != len(g.Channels) {
				t.Errorf("server %s %s %s: %d channels, the fake lists %d", g.GuildID, win.Kind, win.Label, len(chans), len(g.Channels))
			}
			for _, c := range chans {
				if want := w.fake.Count(g.GuildID, c.ChannelID, win.From, win.To); c.Messages != want {
					t.Errorf("server %s %s %s: channel %s has %d, the fake counts %d", g.GuildID, win.Kind, win.Label, c.ChannelID, c.Messages, want)
				}
			}
		}
	}
}
