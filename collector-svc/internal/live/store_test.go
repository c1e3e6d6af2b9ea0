package live

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/migrate/migratetest"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) { testutil.Run(m) }

// both runs fn against a fresh PostgreSQL database and a fresh SQLite file.
func both(t *testing.T, fn func(t *testing.T, gdb *gorm.DB)) {
	migratetest.Dialects(t, reports.Migrations, fn)
}

var ctx = context.Background()

// process is one collector process counting shard of numShards: what it loaded and its flusher.
type process struct {
	acc *Accumulator
	f   *Flusher
}

func start(t *testing.T, w Writer, s *Store, shard, numShards int, now func() time.Time) process {
	t.Helper()
	st, err := s.Load(ctx, shard, numShards, t0.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	acc := NewAccumulator(shard, numShards, st)
	return process{acc, NewFlusher(acc, w, now, nil)}
}

func fixedClock(at time.Time) func() time.Time { return func() time.Time { return at } }

// stream is a session's dispatches: READY, the server's GUILD_CREATE, then n message events
// (seq 3 .. n+2) in blocks of six in one channel, spread over five hours from t0: four messages,
// the deletion of the first, and the bulk deletion of the next two.
func stream(g uint64, n int) []Event {
	evs := []Event{
		{Seq: 1, Type: TypeReady, SessionID: "s1", ResumeURL: "wss://r"},
		{Seq: 2, Type: TypeGuildCreate, GuildID: g, Channels: []Channel{{ID: general, Name: "general"},
			{ID: random, Name: "random"}, {ID: thread, Name: "help", Thread: true}}},
	}
	channels := []uint64{general, random, thread}
	for i := range n {
		blk, j := i/6, i%6
		id := func(j int) uint64 { return msg(time.Duration((blk*37+j*11)%300)*time.Minute, uint64(blk)) }
		ev := Event{Seq: int64(i + 3), Type: TypeMessageCreate, GuildID: g, ChannelID: channels[blk%3], IDs: []uint64{id(j)}}
		switch j {
		case 4:
			ev.Type, ev.IDs = TypeMessageDelete, []uint64{id(0)}
		case 5:
			ev.Type, ev.IDs = TypeMessageDeleteBulk, []uint64{id(1), id(2)}
		}
		evs = append(evs, ev)
	}
	return evs
}

// expected is what the database must hold after evs: a clean pass of the rules. (Flushes clamp
// counts at zero; a stream deletes only messages it made before, so no count goes below.)
func expected(t *testing.T, evs []Event) map[Key]int64 {
	t.Helper()
	a := NewAccumulator(0, 1, State{})
	for _, ev := range evs {
		a.Apply(ev, t0.Add(-time.Hour))
	}
	want := nonZero(a.Take(t0).Counts)
	for k, v := range want {
		if v < 0 {
			t.Fatalf("the stream's count %v goes below zero (%d): choose another", k, v)
		}
	}
	return want
}

func stored(t *testing.T, s *Store, g uint64) map[Key]int64 {
	t.Helper()
	got, err := s.Counts(ctx, g, h10-5, h10+5)
	if err != nil {
		t.Fatal(err)
	}
	return nonZero(got)
}

func TestFlushStoresCountsCheckpointAndChannels(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		p := start(t, s, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
		evs := stream(guild, 60)
		for _, ev := range evs {
			p.f.Apply(ev)
		}
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := stored(t, s, guild), expected(t, evs); !maps.Equal(got, want) {
			t.Errorf("stored %v, want %v", got, want)
		}
		st, err := s.Load(ctx, 0, 1, t0)
		if err != nil {
			t.Fatal(err)
		}
		if cp := st.Checkpoint; cp.SessionID != "s1" || cp.Seq != 62 || cp.ResumeURL != "wss://r" || !cp.FlushedAt.Equal(t0.Add(-time.Hour)) {
			t.Errorf("checkpoint %+v", cp)
		}
		if c := st.Coverage[guild]; c.SinceID != msg(-time.Hour, 0) || len(st.Threads) != 1 || st.Threads[0] != (ChannelKey{guild, thread}) {
			t.Errorf("coverage %+v, threads %v", st.Coverage, st.Threads)
		}
		if other, _ := s.Load(ctx, 1, 2, t0); len(other.Coverage) != 0 || other.Checkpoint.SessionID != "" {
			t.Errorf("shard 1 of 2 loaded %+v: the server is on shard 0", other)
		}
		// A later GUILD_CREATE without random: random was deleted while nobody listened.
		p.f.Apply(Event{Seq: 63, Type: TypeGuildCreate, GuildID: guild, Channels: []Channel{{ID: general, Name: "lobby"}}})
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var chans []struct {
			ChannelID, Name string
			Thread, Deleted bool
		}
		if err := gdb.Table("live_channels").Order("channel_id").Find(&chans).Error; err != nil {
			t.Fatal(err)
		}
		want := "[{500 lobby false false} {501 random false true} {600 help true true}]"
		if got := fmtRows(chans); got != want {
			t.Errorf("channels %s, want %s", got, want)
		}
	})
}

// A process that flushed part of a session and was lost: the next one loads the checkpoint,
// resumes, and is sent everything after it again (and, to be sure, everything before): the
// stored totals are exact.
func TestCrashAndReplayAreExact(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		evs := stream(guild, 90)
		want := expected(t, evs)
		for i, cut := range []int{2, 30, 61} {
			g := guild + uint64(i)<<22*3 // a server of its own per case, on shard 0 of 1
			evs := stream(g, 90)
			s := NewStore(gdb)
			first := start(t, s, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
			if i > 0 {
				// Earlier cases left the shard's checkpoint in session s1: this case is a new process
				// of a new session of its own.
				evs[0].SessionID = "case" + string(rune('a'+i))
			}
			for _, ev := range evs[:cut] {
				first.f.Apply(ev)
			}
			if err := first.f.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs[cut : cut+20] {
				first.f.Apply(ev) // never flushed: lost with the process
			}
			second := start(t, s, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
			if cp := second.f.Checkpoint(); cp.Seq != evs[cut-1].Seq {
				t.Fatalf("cut %d: resumes from seq %d, want %d", cut, cp.Seq, evs[cut-1].Seq)
			}
			for _, ev := range append(evs, evs[1:]...) {
				if ev.Type != TypeReady { // a resume: RESUMED, not READY
					second.f.Apply(ev)
				}
			}
			if err := second.f.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			wantG := map[Key]int64{}
			for k, v := range want {
				k.Guild = g
				wantG[k] = v
			}
			if got := stored(t, s, g); !maps.Equal(got, wantG) {
				t.Errorf("cut %d: stored %v, want %v", cut, got, wantG)
			}
		}
	})
}

// failingCounts makes every insert into live_counts fail while on: the flush's transaction fails
// after its checkpoint, servers and channels were written.
func failingCounts(t *testing.T, gdb *gorm.DB) *atomic.Bool {
	t.Helper()
	var on atomic.Bool
	err := gdb.Callback().Create().Before("gorm:create").Register("test:fail_live_counts", func(tx *gorm.DB) {
		if on.Load() && tx.Statement.Table == "live_counts" {
			_ = tx.AddError(errors.New("injected failure"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return &on
}

func TestFailedFlushChangesNothingAndIsRetried(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		fail := failingCounts(t, gdb)
		p := start(t, s, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
		evs := stream(guild, 40)
		for _, ev := range evs[:20] {
			p.f.Apply(ev)
		}
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		before := stored(t, s, guild)
		cpBefore, _ := s.Load(ctx, 0, 1, t0)
		fail.Store(true)
		for _, ev := range evs[20:30] {
			p.f.Apply(ev)
		}
		if err := p.f.Flush(ctx); err == nil {
			t.Fatal("the flush did not fail")
		}
		for _, ev := range evs[30:] {
			p.f.Apply(ev)
		}
		if err := p.f.Flush(ctx); err == nil {
			t.Fatal("the retry did not fail")
		}
		cpAfter, _ := s.Load(ctx, 0, 1, t0)
		if got := stored(t, s, guild); !maps.Equal(got, before) || cpAfter.Checkpoint != cpBefore.Checkpoint {
			t.Errorf("failed flushes changed the store: counts %v (was %v), checkpoint %+v (was %+v)",
				got, before, cpAfter.Checkpoint, cpBefore.Checkpoint)
		}
		fail.Store(false)
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := stored(t, s, guild), expected(t, evs); !maps.Equal(got, want) {
			t.Errorf("after the retry: %v, want %v", got, want)
		}
		if cp, _ := s.Load(ctx, 0, 1, t0); cp.Checkpoint.Seq != evs[len(evs)-1].Seq {
			t.Errorf("checkpoint seq %d, want %d", cp.Checkpoint.Seq, evs[len(evs)-1].Seq)
		}
	})
}

// lostAnswer commits the first flush and then reports an error, as a connection that breaks
// after COMMIT: the flusher writes the batch again, and it must not count twice.
type lostAnswer struct {
	s    *Store
	once sync.Once
}

func (l *lostAnswer) Flush(ctx context.Context, b Batch) error {
	if err := l.s.Flush(ctx, b); err != nil {
		return err
	}
	err := error(nil)
	l.once.Do(func() { err = errors.New("connection lost after commit") })
	return err
}

func TestFlushCommittedButAnsweredWithAnErrorCountsOnce(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		p := start(t, &lostAnswer{s: s}, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
		evs := stream(guild, 40)
		for _, ev := range evs[:25] {
			p.f.Apply(ev)
		}
		if err := p.f.Flush(ctx); err == nil {
			t.Fatal("the first flush reported no error")
		}
		for _, ev := range evs[25:] {
			p.f.Apply(ev)
		}
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := stored(t, s, guild), expected(t, evs); !maps.Equal(got, want) {
			t.Errorf("stored %v, want %v", got, want)
		}
	})
}

func TestTwoShardsFlushAtOnce(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		guilds := []uint64{guild, guild + 1<<22} // shard 0 and shard 1 of 2
		var wg sync.WaitGroup
		for shard, g := range guilds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := start(t, s, s, shard, 2, fixedClock(t0.Add(-time.Hour)))
				for i, ev := range stream(g, 200) {
					p.f.Apply(ev)
					if i%10 == 9 {
						if err := p.f.Flush(ctx); err != nil {
							t.Errorf("shard %d: %v", shard, err)
						}
					}
				}
				if err := p.f.Flush(ctx); err != nil {
					t.Errorf("shard %d: %v", shard, err)
				}
			}()
		}
		wg.Wait()
		for _, g := range guilds {
			want := map[Key]int64{}
			for k, v := range expected(t, stream(guild, 200)) {
				k.Guild = g
				want[k] = v
			}
			if got := stored(t, s, g); !maps.Equal(got, want) {
				t.Errorf("server %d: %v, want %v", g, got, want)
			}
		}
	})
}

func TestDeletionsNeverTakeACountBelowZero(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		p := start(t, s, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
		for _, ev := range stream(guild, 0) {
			p.f.Apply(ev)
		}
		p.f.Apply(create(3, general, msg(0, 0)))
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// Three deletions in an hour that holds one message (the others were counted by a flush
		// lost with its process), and one in an hour that holds none.
		p.f.Apply(del(4, general, msg(time.Minute, 0), msg(time.Minute, 1), msg(time.Minute, 2)))
		p.f.Apply(del(5, random, msg(time.Hour, 0)))
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := s.Counts(ctx, guild, h10-5, h10+5)
		if err != nil {
			t.Fatal(err)
		}
		want := map[Key]int64{total(h10): 0, chKey(h10, general): 0}
		if !maps.Equal(got, want) {
			t.Errorf("counts %v, want %v", got, want)
		}
	})
}

func TestAnotherWriterOfTheShardIsRefused(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		a := start(t, s, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
		for _, ev := range stream(guild, 5) {
			a.f.Apply(ev)
		}
		if err := a.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		b := start(t, s, s, 0, 1, fixedClock(t0.Add(-time.Hour)))
		a.f.Apply(create(8, general, msg(0, 0)))
		a.f.Apply(create(9, general, msg(0, 2)))
		if err := a.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		before := stored(t, s, guild)
		b.f.Apply(create(8, general, msg(0, 1)))
		if err := b.f.Flush(ctx); !errors.Is(err, ErrCheckpointMoved) {
			t.Fatalf("the second writer's flush: %v, want ErrCheckpointMoved", err)
		}
		if got := stored(t, s, guild); !maps.Equal(got, before) {
			t.Errorf("the refused flush wrote: %v, was %v", got, before)
		}
	})
}

// A session that cannot resume leaves a stored gap from the last flush to the new READY; a
// search fills it, adding its counts in the same transaction as marking it filled.
func TestGapIsStoredAndFilled(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		now := t0.Add(-time.Hour)
		p := start(t, s, s, 0, 1, func() time.Time { return now })
		for _, ev := range stream(guild, 0) {
			p.f.Apply(ev)
		}
		now = t0.Add(10 * time.Minute)
		p.f.Apply(create(3, general, msg(5*time.Minute, 0)))
		if err := p.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(11 * time.Minute)
		p.f.Apply(create(4, general, msg(10*time.Minute+30*time.Second, 0))) // lost with the session
		// The process dies; the next cannot resume.
		now = t0.Add(20 * time.Minute)
		q := start(t, s, s, 0, 1, func() time.Time { return now })
		q.f.Apply(Event{Seq: 1, Type: TypeReady, SessionID: "s2", ResumeURL: "wss://r2"})
		q.f.Apply(Event{Seq: 2, Type: TypeGuildCreate, GuildID: guild})
		q.f.Apply(create(3, general, msg(19*time.Minute, 0))) // made in the gap, delivered late
		q.f.Apply(create(4, general, msg(21*time.Minute, 0)))
		if err := q.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		gap, _ := GapBetween(t0.Add(10*time.Minute), t0.Add(20*time.Minute))
		st, err := s.Load(ctx, 0, 1, t0)
		if err != nil {
			t.Fatal(err)
		}
		if c := st.Coverage[guild]; len(c.Gaps) != 1 || c.Gaps[0] != gap || st.Checkpoint.SessionID != "s2" {
			t.Fatalf("coverage %+v, checkpoint %+v; want the gap %v", c, st.Checkpoint, gap)
		}
		if got := stored(t, s, guild); !maps.Equal(got, map[Key]int64{total(h10): 2, chKey(h10, general): 2}) {
			t.Errorf("before the fill: %v", got)
		}
		if err := q.f.Fill(guild, gap, map[Key]int64{total(h10): 3, chKey(h10, general): 2}); err != nil {
			t.Fatal(err)
		}
		q.f.Apply(del(5, general, msg(15*time.Minute, 0))) // in the gap, now filled: subtracted
		if err := q.f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := stored(t, s, guild); !maps.Equal(got, map[Key]int64{total(h10): 4, chKey(h10, general): 3}) {
			t.Errorf("after the fill: %v", got)
		}
		if st, _ := s.Load(ctx, 0, 1, t0); !st.Coverage[guild].Gaps[0].Filled {
			t.Error("the gap is not stored filled")
		}
		// A fill of a gap already stored filled (a batch written by another path) adds nothing.
		cp := st.Checkpoint
		cp.Seq, cp.FlushedAt = 5, now
		next := cp
		next.Seq = 6
		b := Batch{Shard: 0, NumShards: 1, Prev: cp, Next: next,
			Fills: []Fill{{Guild: guild, Gap: gap, Counts: map[Key]int64{total(h10): 100}}}}
		if err := s.Flush(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := stored(t, s, guild); got[total(h10)] != 4 {
			t.Errorf("a second fill added: %v", got)
		}
		if st, _ := s.Load(ctx, 0, 1, t0.Add(time.Hour)); len(st.Coverage[guild].Gaps) != 0 {
			t.Errorf("a gap ended before keepFrom was loaded: %v", st.Coverage[guild].Gaps)
		}
	})
}

func fmtRows[T any](rows []T) string { return fmt.Sprint(rows) }
