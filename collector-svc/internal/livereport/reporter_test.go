package livereport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

// memDiscord answers every count with n, or fails with err; it counts the calls.
type memDiscord struct {
	mu    sync.Mutex
	n     int64
	err   error
	calls int
}

func (d *memDiscord) Guild(context.Context, string) (discord.Guild, error) {
	return discord.Guild{}, nil
}
func (d *memDiscord) Channels(context.Context, string) ([]discord.Channel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return []discord.Channel{{ID: "1000000000000000000", Name: "general"}}, d.err
}
func (d *memDiscord) CountMessages(context.Context, string, string, time.Time, time.Time) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return d.n, d.err
}
func (d *memDiscord) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// memLive is a live store of fixed coverage and sums.
type memLive struct {
	cov  map[uint64]live.Coverage
	sums map[uint64]int64
	gaps []live.GuildGap
}

func (m *memLive) Coverage(_ context.Context, g uint64) (live.Coverage, bool, error) {
	c, ok := m.cov[g]
	return c, ok, nil
}
func (m *memLive) Sums(context.Context, uint64, int64, int64) (map[uint64]int64, error) {
	return m.sums, nil
}
func (m *memLive) UnfilledGaps(context.Context, time.Time) ([]live.GuildGap, error) {
	return m.gaps, nil
}

// memReports keeps the reports written and the stale marks.
type memReports struct {
	mu      sync.Mutex
	catalog []catalog.Entry
	saved   map[string]reports.Row // guild + " " + period
	stale   map[string]string      // guild + " " + period → code
}

func (m *memReports) Catalog(context.Context) ([]catalog.Entry, error) { return m.catalog, nil }
func (m *memReports) SaveReport(_ context.Context, _ reports.Kind, r reports.Row, _ []reports.ChannelRow) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saved[r.GuildID+" "+r.Period] = r
	return nil
}
func (m *memReports) MarkStale(_ context.Context, _ reports.Kind, g, period, code, _ string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stale[g+" "+period] = code
	return true, nil
}
func (m *memReports) row(key string) (reports.Row, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.saved[key]
	return r, ok
}

// memFiller owns the servers listed and records the fills.
type memFiller struct {
	owns  map[uint64]bool
	fills []live.GuildGap
}

func (f *memFiller) Owns(g uint64) bool { return f.owns[g] }
func (f *memFiller) Fill(g uint64, gap live.Gap, _ map[live.Key]int64) error {
	f.fills = append(f.fills, live.GuildGap{Guild: g, Gap: gap})
	return nil
}

// memRig is a Reporter over memory: servers 5 and 6 are counted here, 7 elsewhere; the catalog
// holds 5 and 7.
func memRig(now time.Time) (*Reporter, *memDiscord, *memLive, *memReports, *memFiller, *testutil.Clock) {
	clock := testutil.NewClock(now)
	d := &memDiscord{n: 3}
	lv := &memLive{cov: map[uint64]live.Coverage{5: {SinceID: 1}, 6: {SinceID: 1}, 7: {SinceID: 1}}, sums: map[uint64]int64{0: 4}}
	rs := &memReports{catalog: []catalog.Entry{{Number: 1, GuildID: "5"}, {Number: 2, GuildID: "7"}},
		saved: map[string]reports.Row{}, stale: map[string]string{}}
	f := &memFiller{owns: map[uint64]bool{5: true, 6: true}}
	rep := New(Config{Discord: d, Channels: collect.New(collect.Config{Discord: d, Now: clock.Now}), Live: lv, Reports: rs,
		Filler: f, Now: clock.Now, GapDelay: time.Minute})
	return rep, d, lv, rs, f, clock
}

func TestRunWritesTheReportsAFlushChanged(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	rep, _, _, rs, _, _ := memRig(now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { rep.Run(ctx, time.Hour); close(done) }()
	b := live.Batch{Counts: map[live.Key]int64{{Guild: 5, Hour: 1}: 1, {Guild: 6, Hour: 1}: 1}}
	rep.AfterFlush(Flush{Shard: 0, NumShards: 1, Batch: &b})
	today, month := "5 "+reports.DayOf(now).String(), "5 "+reports.MonthOf(now).String()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, ok1 := rs.row(today)
		_, ok2 := rs.row(month)
		if ok1 && ok2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run wrote no report after a flush changed server 5")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if row, _ := rs.row(today); row.TotalMessages != 4 || row.Status != reports.StatusOK {
		t.Errorf("today's report %+v, want 4 ok", row)
	}
	if _, ok := rs.row("6 " + reports.DayOf(now).String()); ok {
		t.Error("a server outside the catalog was reported")
	}
	// The day that closed was checked for server 5 only (7 is counted elsewhere).
	if _, ok := rs.row("5 " + reports.DayOf(now).AddDays(-1).String()); !ok {
		t.Error("yesterday was not checked")
	}
	if _, ok := rs.row("7 " + reports.DayOf(now).AddDays(-1).String()); ok {
		t.Error("a server counted elsewhere was checked")
	}
}

func TestFailuresWaitBeforeTheNextTry(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	rep, d, lv, rs, f, clock := memRig(now)
	// Counting of 5 began today: its reports need a search; it has a due gap, and 7 has one too.
	since := discord.SnowflakeAt(now.Add(-time.Hour))
	gap, _ := live.GapBetween(now.Add(-30*time.Minute), now.Add(-20*time.Minute))
	lv.cov[5] = live.Coverage{SinceID: since, Gaps: []live.Gap{gap}}
	// 6 is counted here but not in the catalog; 7 is in the catalog but counted elsewhere.
	lv.gaps = []live.GuildGap{{Guild: 5, Gap: gap}, {Guild: 6, Gap: gap}, {Guild: 7, Gap: gap}}
	rep.closed[5] = closingDay(now, time.Minute) // no close in this test
	d.err = errors.New("search down")
	rep.Note(5)
	ctx := context.Background()
	if err := rep.Flushed(ctx); err == nil {
		t.Fatal("no error with the searches failing")
	}
	if code := rs.stale["5 "+reports.DayOf(now).String()]; code != collect.CodeDiscordError {
		t.Errorf("today's report marked %q, want %s", code, collect.CodeDiscordError)
	}
	if len(f.fills) != 0 {
		t.Fatalf("a failed search filled %v", f.fills)
	}
	calls := d.count()
	rep.Note(5)
	if err := rep.Flushed(ctx); err != nil {
		t.Fatalf("Flushed while the failures wait: %v", err)
	}
	if n := d.count() - calls; n != 0 {
		t.Fatalf("%d requests before the failures' wait ended", n)
	}
	d.err = nil
	clock.Add(time.Minute)
	if err := rep.Flushed(ctx); err != nil {
		t.Fatal(err)
	}
	if len(f.fills) != 1 || f.fills[0].Guild != 5 {
		t.Fatalf("fills %v, want the gap of 5 only", f.fills)
	}
	row, ok := rs.row("5 " + reports.DayOf(now).String())
	if !ok || row.Status != reports.StatusStale || deref(row.ErrorCode) != collect.CodeGapNotFilled || row.TotalMessages != 4+3 {
		t.Fatalf("today's report %+v, want stale gap_not_filled with 4 live + 3 searched", row)
	}
	// A fill handed over is not searched again while its flush is pending.
	calls = d.count()
	if err := rep.Flushed(ctx); err != nil {
		t.Fatal(err)
	}
	if n := d.count() - calls; n != 0 || len(f.fills) != 1 {
		t.Fatalf("a pending fill searched again: %d requests, fills %v", n, f.fills)
	}
}

func TestAfterFlushWithoutItsBatch(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	rep, _, _, rs, _, _ := memRig(now)
	rep.closed[5] = closingDay(now, time.Minute)
	rep.written[5] = now // written lately: only a change writes it again
	// Servers 5 and 7 are of shard 0 of 2 (their ids >> 22 are 0); 7 is counted elsewhere.
	rep.AfterFlush(Flush{Shard: 1, NumShards: 2})
	if err := rep.Flushed(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := rs.row("5 " + reports.DayOf(now).String()); ok {
		t.Fatal("a server of another shard was written")
	}
	rep.AfterFlush(Flush{Shard: 0, NumShards: 2})
	if err := rep.Flushed(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := rs.row("5 " + reports.DayOf(now).String()); !ok {
		t.Fatal("a flush of the shard without its batch did not write its server")
	}
}

// TestQuietServersAreWrittenAgain: the reports of a server counted here whose counts do not
// change are written at the first step, then again every SearchEvery and when a new day begins,
// never in between.
func TestQuietServersAreWrittenAgain(t *testing.T) {
	now := time.Date(2026, 11, 20, 20, 55, 0, 0, time.UTC) // 23:55 Moscow time
	rep, _, _, rs, _, clock := memRig(now)
	ctx := context.Background()
	step := func(at time.Time) {
		t.Helper()
		clock.Set(at)
		rep.closed[5] = closingDay(at, time.Minute) // no close in this test
		if err := rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	generated := func(day time.Time) time.Time {
		row, ok := rs.row("5 " + reports.DayOf(day).String())
		if !ok {
			return time.Time{}
		}
		return row.GeneratedAt
	}
	step(now)
	if got := generated(now); !got.Equal(now) {
		t.Fatalf("first step: today's report generated at %v, want %v", got, now)
	}
	if _, ok := rs.row("7 " + reports.DayOf(now).String()); ok {
		t.Fatal("a server counted elsewhere was written")
	}
	step(now.Add(4 * time.Minute))
	if got := generated(now); !got.Equal(now) {
		t.Fatalf("4 minutes later, unchanged: generated at %v, want still %v", got, now)
	}
	midnight := reports.DayOf(now).End()
	step(midnight.Add(time.Second)) // a new Moscow day, 5 min 1 s after the last write
	if got := generated(midnight); !got.Equal(midnight.Add(time.Second)) {
		t.Fatalf("a new day: its report generated at %v, want %v", got, midnight.Add(time.Second))
	}
	step(midnight.Add(10*time.Minute + time.Second - time.Millisecond))
	if got := generated(midnight); !got.Equal(midnight.Add(time.Second)) {
		t.Fatalf("before SearchEvery: generated at %v", got)
	}
	step(midnight.Add(10*time.Minute + time.Second))
	if got := generated(midnight); !got.Equal(midnight.Add(10*time.Minute + time.Second)) {
		t.Fatalf("after SearchEvery: generated at %v", got)
	}
}

func TestRefreshDue(t *testing.T) {
	at := time.Date(2026, 11, 20, 20, 55, 0, 0, time.UTC) // 23:55 Moscow time
	cases := []struct {
		now  time.Time
		want bool
	}{
		{at, false},
		{at.Add(4*time.Minute + 59*time.Second), false},
		{at.Add(5 * time.Minute), true}, // Moscow midnight
		{at.Add(-time.Minute), false},
		{at.Add(-time.Hour * 24), true},
	}
	for _, c := range cases {
		if got := refreshDue(at, c.now, 10*time.Minute); got != c.want {
			t.Errorf("refreshDue(%s, %s) = %v, want %v", at, c.now, got, c.want)
		}
	}
	if !refreshDue(at.Add(-10*time.Hour), at.Add(-10*time.Hour+10*time.Minute), 10*time.Minute) {
		t.Error("SearchEvery after the write is due")
	}
}

func TestShardsHeardOf(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	s := &shards{now: clock.Now, heldFor: time.Minute, held: map[int]heldShard{}}
	odd, even := uint64(1)<<22, uint64(2)<<22
	if s.Owns(odd) || s.Owns(even) {
		t.Fatal("a shard never heard of is owned")
	}
	fl := live.NewFlusher(live.NewAccumulator(1, 2, live.State{}), nil, nil, nil)
	s.heard(Flush{Shard: 1, NumShards: 2, Flusher: fl})
	if !s.Owns(odd) || s.Owns(even) {
		t.Fatal("shard 1 of 2 is flushed here, and only it")
	}
	if err := s.Fill(even, live.Gap{}, nil); !errors.Is(err, live.ErrFill) {
		t.Fatalf("a fill of another shard's server: %v", err)
	}
	// The shard's flusher refuses a gap it does not know.
	if err := s.Fill(odd, live.Gap{MinID: 1, MaxID: 5}, nil); !errors.Is(err, live.ErrFill) {
		t.Fatalf("a fill of an unknown gap: %v", err)
	}
	clock.Add(time.Minute)
	if s.Owns(odd) {
		t.Fatal("a shard not heard of for heldFor is still owned")
	}
	s.heard(Flush{Shard: 1, NumShards: 2, Flusher: fl})
	s.heard(Flush{Shard: 0, NumShards: 3, Flusher: fl})
	if s.Owns(odd) || !s.Owns(uint64(3)<<22) {
		t.Fatal("after the shard count changed, only the shards heard of since are owned")
	}
}
