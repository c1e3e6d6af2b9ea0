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
	cov      map[uint64]live.Coverage
	sums     map[uint64]int64
	gaps     []live.GuildGap
	mu       sync.Mutex
	finished map[uint64]map[string]bool
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

// GuildChannels: the gateway never listed the channels (they are listed over REST).
func (m *memLive) GuildChannels(context.Context, uint64) ([]discord.Channel, bool, error) {
	return nil, false, nil
}
func (m *memLive) Finish(_ context.Context, g uint64, period string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished == nil {
		m.finished = map[uint64]map[string]bool{}
	}
	if m.finished[g] == nil {
		m.finished[g] = map[string]bool{}
	}
	m.finished[g][period] = true
	return nil
}
func (m *memLive) Unfinish(_ context.Context, g uint64, period string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.finished[g], period)
	return nil
}
func (m *memLive) FinishedOf(_ context.Context, g uint64, periods []string) (map[string]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]bool{}
	for _, p := range periods {
		if m.finished[g][p] {
			out[p] = true
		}
	}
	return out, nil
}

func (m *memLive) isFinished(g uint64, period string) bool {
	done, _ := m.FinishedOf(context.Background(), g, []string{period})
	return done[period]
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

// TestClosingRecordsFinished: a closed day is recorded finished only when its check found the
// live total equal to the search's, and its month, as its last day closes, only when every day of
// it counted live was finished and no gap in it is unfilled.
func TestClosingRecordsFinished(t *testing.T) {
	now := time.Date(2026, 11, 30, 21, 3, 0, 0, time.UTC) // 1 December, 00:03 Moscow time
	nov := reports.Month{Year: 2026, Month: time.November}
	for _, tt := range []struct {
		name       string
		search     int64 // the search's total of 30 November (the live total is 4)
		missing    string
		since      uint64
		dayFinal   bool
		monthFinal bool
	}{
		{"every day agreed", 4, "", 1, true, true},
		{"an earlier day was not finished", 4, "2026-11-12", 1, true, false},
		{"the last day differs", 5, "", 1, false, false},
		{"counting began during the month", 4, "", discord.SnowflakeAt(nov.Start().Add(time.Hour)), true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, d, lv, _, _, _ := memRig(now)
			d.n = tt.search
			lv.cov[5] = live.Coverage{SinceID: tt.since}
			// Every period recorded finished before (a check of an earlier process, then this
			// process's check again): a check that does not confirm it forgets the record.
			for _, p := range []string{nov.String(), nov.Last().String()} {
				if err := lv.Finish(context.Background(), 5, p, now); err != nil {
					t.Fatal(err)
				}
			}
			for day := nov.First(); day != nov.Last(); day = day.AddDays(1) {
				if day.String() != tt.missing {
					if err := lv.Finish(context.Background(), 5, day.String(), now); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := rep.Flushed(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := lv.isFinished(5, nov.Last().String()); got != tt.dayFinal {
				t.Errorf("30 November finished %v, want %v", got, tt.dayFinal)
			}
			if got := lv.isFinished(5, nov.String()); got != tt.monthFinal {
				t.Errorf("November finished %v, want %v", got, tt.monthFinal)
			}
		})
	}
}

// TestDeletionRewritesFinishedDay: a batch that changes the counts of a finished closed day has
// its report written again from live counts at the next step, with no request; a day not finished
// is left to the pass.
func TestDeletionRewritesFinishedDay(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	yesterday := reports.DayOf(now).AddDays(-1)
	rep, d, lv, rs, _, clock := memRig(now)
	// The search agrees with the live total: the first step checks yesterday and finishes it.
	d.n = 4
	if err := rep.Flushed(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !lv.isFinished(5, yesterday.String()) {
		t.Fatal("yesterday was not finished at its check")
	}
	d.n = 3 // the search would now say 3: the rewrite must not ask it
	lv.sums = map[uint64]int64{0: 3}
	calls := d.count()
	clock.Add(time.Minute)
	b := live.Batch{Counts: map[live.Key]int64{{Guild: 5, Hour: live.HourAt(yesterday.Start().Add(5 * time.Hour))}: -1}}
	rep.AfterFlush(Flush{Shard: 0, NumShards: 1, Batch: &b})
	if err := rep.Flushed(context.Background()); err != nil {
		t.Fatal(err)
	}
	if row, _ := rs.row("5 " + yesterday.String()); row.TotalMessages != 3 {
		t.Errorf("yesterday after a deletion: total %d, want 3", row.TotalMessages)
	}
	if n := d.count() - calls; n != 0 { // the channel list of the first step is reused
		t.Errorf("the rewrite sent %d requests, want none", n)
	}
	// The same deletion in a day not finished: the report stays as it was (the pass's).
	lv.mu.Lock()
	delete(lv.finished[5], yesterday.String())
	lv.mu.Unlock()
	lv.sums = map[uint64]int64{0: 2}
	clock.Add(time.Minute)
	rep.AfterFlush(Flush{Shard: 0, NumShards: 1, Batch: &b})
	if err := rep.Flushed(context.Background()); err != nil {
		t.Fatal(err)
	}
	if row, _ := rs.row("5 " + yesterday.String()); row.TotalMessages != 3 {
		t.Errorf("a day not finished was rewritten: total %d, want 3", row.TotalMessages)
	}
}
