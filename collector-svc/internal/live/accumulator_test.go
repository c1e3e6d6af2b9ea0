package live

import (
	"maps"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// t0 is 10:00 UTC: the hour the tests count in.
var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

var h10 = HourAt(t0)

// msg is the id of a message made at t0+d; n tells messages of one millisecond apart.
func msg(d time.Duration, n uint64) uint64 { return discord.SnowflakeAt(t0.Add(d)) + n }

const (
	guild   = uint64(1) << 40
	general = uint64(500)
	random  = uint64(501)
	thread  = uint64(600)
)

// started is a shard that has begun counting guild at t0-1h (seq 1 READY, seq 2 GUILD_CREATE).
func started(t *testing.T) *Accumulator {
	t.Helper()
	a := NewAccumulator(0, 1, State{})
	a.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s1", ResumeURL: "wss://r"}, t0.Add(-time.Hour))
	a.Apply(Event{Seq: 2, Type: TypeGuildCreate, GuildID: guild, Channels: []Channel{
		{ID: general, Name: "general"}, {ID: random, Name: "random"}, {ID: thread, Name: "help", Thread: true},
	}}, t0.Add(-time.Hour))
	return a
}

func create(seq int64, ch uint64, ids ...uint64) Event {
	return Event{Seq: seq, Type: TypeMessageCreate, GuildID: guild, ChannelID: ch, IDs: ids}
}

func del(seq int64, ch uint64, ids ...uint64) Event {
	typ := TypeMessageDelete
	if len(ids) > 1 {
		typ = TypeMessageDeleteBulk
	}
	return Event{Seq: seq, Type: typ, GuildID: guild, ChannelID: ch, IDs: ids}
}

func total(h int64) Key           { return Key{guild, h, 0} }
func chKey(h int64, c uint64) Key { return Key{guild, h, c} }

func TestAccumulatorRules(t *testing.T) {
	gapFrom, gapTo := t0.Add(20*time.Minute), t0.Add(30*time.Minute)
	gap, _ := GapBetween(gapFrom, gapTo)
	for _, c := range []struct {
		name   string
		events []Event
		setup  func(a *Accumulator)
		at     time.Duration // when the events arrive, after t0
		want   map[Key]int64
	}{
		{"a message counts in its channel and the total", []Event{create(3, general, msg(time.Minute, 0))}, nil, time.Minute,
			map[Key]int64{total(h10): 1, chKey(h10, general): 1}},
		{"the hour is the snowflake's, not the arrival's", []Event{create(3, general, msg(-time.Millisecond, 0))}, nil, time.Minute,
			map[Key]int64{total(h10 - 1): 1, chKey(h10-1, general): 1}},
		{"a thread named by the event counts in the total only", []Event{{Seq: 3, Type: TypeMessageCreate, GuildID: guild,
			ChannelID: 999, ParentID: general, IDs: []uint64{msg(0, 0)}}}, nil, 0, map[Key]int64{total(h10): 1}},
		{"a thread known from GUILD_CREATE counts in the total only", []Event{create(3, thread, msg(0, 0))}, nil, 0,
			map[Key]int64{total(h10): 1}},
		{"a thread known from THREAD_CREATE counts in the total only", []Event{
			{Seq: 3, Type: TypeThreadCreate, GuildID: guild, Channels: []Channel{{ID: 700, Name: "t"}}},
			create(4, 700, msg(0, 0))}, nil, 0, map[Key]int64{total(h10): 1}},
		{"a channel made a thread by an update is no longer listed", []Event{
			{Seq: 3, Type: TypeChannelUpdate, GuildID: guild, Channels: []Channel{{ID: random, Name: "r", Thread: true}}},
			create(4, random, msg(0, 0))}, nil, 0, map[Key]int64{total(h10): 1}},
		{"a deletion subtracts in its message's hour", []Event{create(3, general, msg(time.Minute, 0)),
			del(4, general, msg(-time.Minute, 0))}, nil, time.Hour,
			map[Key]int64{total(h10): 1, chKey(h10, general): 1, total(h10 - 1): -1, chKey(h10-1, general): -1}},
		{"a bulk deletion subtracts each message", []Event{del(3, general, msg(0, 0), msg(0, 1), msg(time.Hour, 0))}, nil,
			2 * time.Hour, map[Key]int64{total(h10): -2, chKey(h10, general): -2, total(h10 + 1): -1, chKey(h10+1, general): -1}},
		{"a replayed sequence number counts once", []Event{create(3, general, msg(0, 0)), create(3, general, msg(0, 0)),
			create(2, general, msg(0, 1))}, nil, 0, map[Key]int64{total(h10): 1, chKey(h10, general): 1}},
		{"a server not counted yet counts nothing", []Event{{Seq: 3, Type: TypeMessageCreate, GuildID: 7, ChannelID: 8,
			IDs: []uint64{msg(0, 0)}}}, nil, 0, map[Key]int64{}},
		{"a message made before counting began is search's", []Event{create(3, general, msg(-2*time.Hour, 0)),
			del(4, general, msg(-2*time.Hour, 1))}, nil, 0, map[Key]int64{}},
		{"a message of a gap, filled or not, is search's", []Event{create(3, general, msg(25*time.Minute, 0), msg(26*time.Minute, 0))},
			func(a *Accumulator) { a.coverage[guild].Gaps = []Gap{gap} }, time.Hour, map[Key]int64{}},
		{"a deletion in an unfilled gap is not subtracted", []Event{del(3, general, msg(25*time.Minute, 0))},
			func(a *Accumulator) { a.coverage[guild].Gaps = []Gap{gap} }, time.Hour, map[Key]int64{}},
		{"a deletion in a filled gap is subtracted", []Event{del(3, general, msg(25*time.Minute, 0))},
			func(a *Accumulator) {
				a.coverage[guild].Gaps = []Gap{{MinID: gap.MinID, MaxID: gap.MaxID, Filled: true}}
			},
			time.Hour, map[Key]int64{total(h10): -1, chKey(h10, general): -1}},
		{"the gap's edges are the snowflake times: from included, to excluded", []Event{
			create(3, general, discord.SnowflakeAt(gapFrom)-1, discord.SnowflakeAt(gapFrom), discord.SnowflakeAt(gapTo)-1, discord.SnowflakeAt(gapTo))},
			func(a *Accumulator) { a.coverage[guild].Gaps = []Gap{gap} }, time.Hour, map[Key]int64{total(h10): 2, chKey(h10, general): 2}},
		{"a deletion before the cut-off is not subtracted", []Event{del(3, general, msg(-time.Millisecond, 0), msg(0, 0))},
			func(a *Accumulator) { a.SetCutoff(t0) }, time.Hour, map[Key]int64{total(h10): -1, chKey(h10, general): -1}},
		{"events of other types count nothing and move the sequence", []Event{{Seq: 3, Type: "TYPING_START", GuildID: guild},
			create(3, general, msg(0, 0))}, nil, 0, map[Key]int64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := started(t)
			if c.setup != nil {
				c.setup(a)
			}
			for _, ev := range c.events {
				a.Apply(ev, t0.Add(c.at))
			}
			b := a.Take(t0.Add(c.at))
			got := maps.Clone(b.Counts)
			maps.DeleteFunc(got, func(_ Key, v int64) bool { return v == 0 })
			if !maps.Equal(got, c.want) {
				t.Errorf("counts %v, want %v", got, c.want)
			}
			if want := c.events[len(c.events)-1].Seq; b.Next.Seq < want {
				t.Errorf("checkpoint seq %d, want at least %d", b.Next.Seq, want)
			}
		})
	}
}

func TestAccumulatorLearnsChannels(t *testing.T) {
	a := started(t)
	a.Apply(Event{Seq: 3, Type: TypeChannelCreate, GuildID: guild, Channels: []Channel{{ID: 800, Name: "new"}}}, t0)
	a.Apply(Event{Seq: 4, Type: TypeChannelUpdate, GuildID: guild, Channels: []Channel{{ID: general, Name: "lobby"}}}, t0)
	a.Apply(Event{Seq: 5, Type: TypeChannelDelete, GuildID: guild, Channels: []Channel{{ID: random, Name: "random"}}}, t0)
	b := a.Take(t0)
	want := map[ChannelKey]ChannelState{
		{guild, general}: {Name: "lobby"},
		{guild, random}:  {Name: "random", Deleted: true},
		{guild, thread}:  {Name: "help", Thread: true},
		{guild, 800}:     {Name: "new"},
	}
	if !maps.Equal(b.Channels, want) {
		t.Errorf("channels %v, want %v", b.Channels, want)
	}
	if got := b.Listed[guild]; len(got) != 3 {
		t.Errorf("GUILD_CREATE listed %v, want its three channels", got)
	}
	if since := b.Guilds[guild]; since != discord.SnowflakeAt(t0.Add(-time.Hour)) {
		t.Errorf("counting of the server began at %d, want the snowflake of its GUILD_CREATE", since)
	}
	// A second GUILD_CREATE (a new session) keeps the start of counting; listing no channel (a
	// server unavailable), it deletes none.
	a.Apply(Event{Seq: 6, Type: TypeGuildCreate, GuildID: guild}, t0.Add(time.Hour))
	if b := a.Take(t0.Add(time.Hour)); len(b.Guilds) != 0 || len(b.Listed) != 0 {
		t.Errorf("a second GUILD_CREATE restarted counting (%v) or listed %v", b.Guilds, b.Listed)
	}
}

// A session that cannot resume: the counts since the last stored flush are dropped, and the
// servers get a gap from that flush to the new READY, which the new session does not count in.
func TestAccumulatorNewSessionLeavesAGap(t *testing.T) {
	a := started(t)
	a.Apply(create(3, general, msg(0, 0)), t0)
	first := a.Take(t0.Add(time.Second))
	a.Committed(first)
	a.Apply(create(4, general, msg(2*time.Second, 0)), t0.Add(2*time.Second)) // lost with the session
	ready := t0.Add(time.Minute)
	a.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s2", ResumeURL: "wss://r2"}, ready)
	a.Apply(Event{Seq: 2, Type: TypeGuildCreate, GuildID: guild}, ready)
	a.Apply(create(3, general, msg(50*time.Second, 0)), ready.Add(time.Second)) // made in the gap, delivered late
	a.Apply(create(4, general, msg(61*time.Second, 0)), ready.Add(time.Second))
	b := a.Take(ready.Add(2 * time.Second))
	want, _ := GapBetween(t0.Add(time.Second), ready)
	if !b.NewSession || b.Prev != first.Next || b.Next.SessionID != "s2" || b.Next.Seq != 4 || b.Next.ResumeURL != "wss://r2" {
		t.Errorf("checkpoints: prev %+v next %+v new session %t", b.Prev, b.Next, b.NewSession)
	}
	if got := b.Gaps[guild]; len(got) != 1 || got[0] != want {
		t.Errorf("gaps %v, want %v", got, want)
	}
	if wantCounts := (map[Key]int64{total(h10): 1, chKey(h10, general): 1}); !maps.Equal(b.Counts, wantCounts) {
		t.Errorf("counts %v, want %v", b.Counts, wantCounts)
	}
	if c, _ := a.Coverage(guild); len(c.Gaps) != 1 || c.Gaps[0] != want {
		t.Errorf("coverage gaps %v, want %v", c.Gaps, want)
	}
}

// The gap starts at the last flush stored when the new session's batch is taken: one under way
// at the READY counts if it commits, and is in the gap if it fails.
func TestAccumulatorGapStartsAtTheLastStoredFlush(t *testing.T) {
	for _, committed := range []bool{true, false} {
		a := started(t)
		stored := a.Take(t0)
		a.Committed(stored)
		a.Apply(create(3, general, msg(time.Second, 0)), t0.Add(time.Second))
		inFlight := a.Take(t0.Add(2 * time.Second))
		ready := t0.Add(time.Minute)
		a.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s2"}, ready)
		from := t0
		if committed {
			a.Committed(inFlight)
			from = inFlight.Next.FlushedAt
		}
		want, _ := GapBetween(from, ready)
		b := a.Take(ready)
		if got := b.Gaps[guild]; len(got) != 1 || got[0] != want {
			t.Errorf("committed %t: gaps %v, want %v", committed, got, want)
		}
		if c, _ := a.Coverage(guild); len(c.Gaps) != 1 || c.Gaps[0] != want {
			t.Errorf("committed %t: coverage gaps %v, want %v", committed, c.Gaps, want)
		}
	}
}

func TestAccumulatorFill(t *testing.T) {
	a := started(t)
	gap, _ := GapBetween(t0.Add(50*time.Minute), t0.Add(70*time.Minute))
	a.coverage[guild].Gaps = []Gap{gap}
	for _, c := range []struct {
		name   string
		guild  uint64
		gap    Gap
		counts map[Key]int64
	}{
		{"another server", 7, gap, nil},
		{"an unknown gap", guild, Gap{MinID: gap.MinID, MaxID: gap.MaxID + 1}, nil},
		{"a count outside the gap's hours", guild, gap, map[Key]int64{total(h10 + 2): 1}},
		{"a count of another server", guild, gap, map[Key]int64{{7, h10, 0}: 1}},
		{"a negative count", guild, gap, map[Key]int64{total(h10): -1}},
	} {
		if err := a.Fill(c.guild, c.gap, c.counts); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	counts := map[Key]int64{total(h10): 4, chKey(h10, general): 3, total(h10 + 1): 2}
	if err := a.Fill(guild, gap, counts); err != nil {
		t.Fatal(err)
	}
	if err := a.Fill(guild, gap, counts); err == nil {
		t.Error("a gap was filled twice")
	}
	// A deletion in the filled gap now subtracts, in the same batch as the fill.
	a.Apply(del(3, general, msg(55*time.Minute, 0)), t0.Add(2*time.Hour))
	b := a.Take(t0.Add(2 * time.Hour))
	if len(b.Fills) != 1 || !maps.Equal(b.Fills[0].Counts, counts) || b.Counts[total(h10)] != -1 {
		t.Errorf("fills %+v, counts %v", b.Fills, b.Counts)
	}
}

func TestSetCutoffForgetsOldGaps(t *testing.T) {
	a := started(t)
	old, recent := gapOf(-50*time.Minute, -40*time.Minute, false), gapOf(-10*time.Minute, 10*time.Minute, false)
	a.coverage[guild].Gaps = []Gap{old, recent}
	a.SetCutoff(t0.Add(-30 * time.Minute))
	if c, _ := a.Coverage(guild); len(c.Gaps) != 1 || c.Gaps[0] != recent {
		t.Errorf("gaps after the cut-off %v, want only %v", c.Gaps, recent)
	}
}

// TestAccumulatorNoGapWhenCountingBeginsInTheReadyMillisecond: a server first seen in the session
// just started has nothing to search, even when its GUILD_CREATE is applied within the
// millisecond of the READY (a start of counting is a whole millisecond, the READY an instant):
// no gap is recorded, and its messages of that millisecond are counted live, once.
func TestAccumulatorNoGapWhenCountingBeginsInTheReadyMillisecond(t *testing.T) {
	ready := t0.Add(599*time.Millisecond + 100*time.Microsecond)
	a := NewAccumulator(0, 1, State{})
	a.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s1", ResumeURL: "wss://r"}, ready)
	a.Apply(Event{Seq: 2, Type: TypeGuildCreate, GuildID: guild, Channels: []Channel{{ID: general, Name: "general"}}},
		ready.Add(300*time.Microsecond))
	a.Apply(create(3, general, msg(599*time.Millisecond, 1)), ready.Add(time.Millisecond)) // before the first flush
	first := a.Take(ready.Add(time.Second))
	a.Committed(first)
	if len(first.Gaps) != 0 {
		t.Fatalf("gaps %v at the start of counting: nothing was missed", first.Gaps)
	}
	a.Apply(create(4, general, msg(599*time.Millisecond, 2)), ready.Add(2*time.Second)) // after it
	second := a.Take(ready.Add(3 * time.Second))
	got := first.Counts[total(h10)] + second.Counts[total(h10)]
	if c, _ := a.Coverage(guild); got != 2 || len(c.Gaps) != 0 {
		t.Fatalf("counted %d of the 2 messages of the READY's millisecond, coverage gaps %v", got, c.Gaps)
	}
}
