package collect

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
)

func TestLiveOwns(t *testing.T) {
	start := ts("2026-11-19T09:00:00Z") // 12:00 Moscow time, 19 November
	fresh := 2 * time.Minute
	ws := reports.ForPass(start)
	today, yesterday, month, prevMonth, backfill := ws[0], ws[1], ws[2], ws[3], ws[4]
	counted := live.Counted{SinceID: discord.SnowflakeAt(start.Add(-48 * time.Hour)), Flushed: start.Add(-5 * time.Second)}
	late := counted
	late.SinceID = discord.SnowflakeAt(start.Add(-time.Minute)) // counting began a minute ago
	at := func(d time.Duration) live.Counted { c := counted; c.Flushed = start.Add(d); return c }
	cases := []struct {
		name     string
		w        reports.Window
		c        live.Counted
		counting bool
		want     bool
	}{
		{"today, shard flushed 5 s ago", today, counted, true, true},
		{"this month, shard flushed 5 s ago", month, counted, true, true},
		{"today, counting began a minute ago", today, late, true, true},
		{"yesterday is closed: the pass's", yesterday, counted, true, false},
		{"the previous month is closed: the pass's", prevMonth, counted, true, false},
		{"a backfill day: the pass's", backfill, counted, true, false},
		{"never counted live", today, live.Counted{}, false, false},
		{"counted, no checkpoint of its shard", today, live.Counted{SinceID: counted.SinceID}, true, false},
		{"flushed just within the bound", today, at(-fresh + time.Millisecond), true, true},
		{"flushed exactly the bound ago", today, at(-fresh), true, false},
		{"flushed an hour ago: shard unheld", month, at(-time.Hour), true, false},
		{"flushed a little after the start (clock skew)", today, at(time.Second), true, true},
		{"flushed far after the start (clock far ahead)", today, at(time.Hour), true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := LiveOwns(c.w, c.c, c.counting, start, fresh); got != c.want {
				t.Errorf("LiveOwns(%s %s) = %v, want %v", c.w.Kind, c.w.Label, got, c.want)
			}
		})
	}
	// A window that ends exactly at the start is closed.
	w := reports.Window{Kind: reports.KindDay, Label: "x", From: start.Add(-24 * time.Hour), To: start}
	if LiveOwns(w, counted, true, start, fresh) {
		t.Error("a window ending at the pass's start is closed: the pass's")
	}
}

// memLive is the LiveCounts of the tests.
type memLive struct {
	mu       sync.Mutex
	counted  map[string]live.Counted
	finished map[string]map[string]bool
	err      error
}

func (m *memLive) Finished(_ context.Context, periods []string) (map[string]map[string]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]map[string]bool{}
	for g, ps := range m.finished {
		for _, p := range periods {
			if ps[p] {
				if out[g] == nil {
					out[g] = map[string]bool{}
				}
				out[g][p] = true
			}
		}
	}
	return out, m.err
}

func (m *memLive) Counted(context.Context) (map[string]live.Counted, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]live.Counted, len(m.counted))
	for k, v := range m.counted {
		out[k] = v
	}
	return out, m.err
}

// TestPassLeavesLiveWindows: with A counted live and its shard just flushed, a pass writes neither
// today's nor this month's report of A and asks no search of them, and writes everything of B
// (not counted live) and A's closed windows. Once A's shard is no longer flushed, or live counts
// cannot be read, the pass writes A's open windows again.
func TestPassLeavesLiveWindows(t *testing.T) {
	e := newEnv(t, "2026-11-19T09:00:00Z")
	lc := &memLive{counted: map[string]live.Counted{
		guildA: {SinceID: discord.SnowflakeAt(ts("2026-11-01T00:00:00Z")), Flushed: ts("2026-11-19T08:59:58Z")},
	}}
	e.col.cfg.Live, e.col.cfg.LiveFresh = lc, 2*time.Minute
	res, err := e.col.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	today, month := reports.DayOf(e.clock.Now()), reports.MonthOf(e.clock.Now())
	todayW, monthW := today.Window(), month.Window()
	if res.Live != 2 {
		t.Errorf("%d windows left to live counting, want 2", res.Live)
	}
	for _, c := range e.discord.takeCalls() {
		if c.guildID == guildA && c.channelID != "guild" && c.channelID != "channels" && c.to.After(e.clock.Now()) {
			t.Errorf("a search of A's open window %s..%s was sent", c.from, c.to)
		}
	}
	if _, ok := e.daily(t, guildA, today.String()); ok {
		t.Error("the pass wrote A's today report")
	}
	if _, ok := e.monthly(t, guildA, month.String()); ok {
		t.Error("the pass wrote A's month report")
	}
	if _, ok := e.daily(t, guildA, today.AddDays(-1).String()); !ok {
		t.Error("A's yesterday (closed) not written")
	}
	if _, ok := e.monthly(t, guildA, month.AddMonths(-1).String()); !ok {
		t.Error("A's previous month (closed) not written")
	}
	b, ok := e.daily(t, guildB, today.String())
	if !ok {
		t.Fatal("B's today report not written")
	}
	e.checkCounts(t, b, guildB, todayW.From, todayW.To)
	if bm, ok := e.monthly(t, guildB, month.String()); !ok {
		t.Fatal("B's month report not written")
	} else {
		e.checkCounts(t, bm, guildB, monthW.From, monthW.To)
	}

	// A 401 marks the pass's windows stale, never those live counting writes.
	e.st.mu.Lock()
	e.st.reports[reportKey{reports.KindDay, guildA, today.String()}] = memReport{Row: reports.Row{GuildID: guildA, Period: today.String(), Status: reports.StatusOK}}
	e.st.mu.Unlock()
	e.discord.fail = func(string, string, time.Time) error { return discord.ErrUnauthorized }
	e.clock.Add(time.Minute)
	lc.mu.Lock()
	lc.counted[guildA] = live.Counted{SinceID: lc.counted[guildA].SinceID, Flushed: e.clock.Now().Add(-time.Second)}
	lc.mu.Unlock()
	if _, err := e.col.Pass(context.Background()); !errors.Is(err, ErrPassFailed) {
		t.Fatalf("pass with 401: %v", err)
	}
	if r, _ := e.daily(t, guildA, today.String()); r.Status != reports.StatusOK {
		t.Errorf("A's today report written from live counts was marked %s by the pass", r.Status)
	}
	e.discord.fail = nil

	// The shard is no longer flushed: the pass writes A's open windows again.
	e.clock.Add(3 * time.Minute)
	e.pass(t)
	if r, ok := e.daily(t, guildA, today.String()); !ok || r.Status != reports.StatusOK {
		t.Fatalf("A's today report after its shard stopped: %+v, %v", r, ok)
	} else {
		e.checkCounts(t, r, guildA, todayW.From, todayW.To)
	}

	// Live counts that cannot be read leave every window to the pass.
	e.clock.Add(time.Minute)
	lc.mu.Lock()
	lc.counted[guildA] = live.Counted{SinceID: lc.counted[guildA].SinceID, Flushed: e.clock.Now()}
	lc.err = errors.New("database gone")
	lc.mu.Unlock()
	res, err = e.col.Pass(context.Background())
	if err != nil || res.Live != 0 {
		t.Fatalf("pass without live counts: live windows %d, %v", res.Live, err)
	}
	if r, _ := e.monthly(t, guildA, month.String()); !r.GeneratedAt.Equal(e.clock.Now()) {
		t.Errorf("A's month report generated at %s, want this pass's %s", r.GeneratedAt, e.clock.Now())
	}
}

func TestLiveFinished(t *testing.T) {
	start := ts("2026-11-19T09:00:00Z")
	ws := reports.ForPass(start)
	today, yesterday, month, prevMonth, backfill := ws[0], ws[1], ws[2], ws[3], ws[4]
	cases := []struct {
		name              string
		w                 reports.Window
		covered, finished bool
		want              bool
	}{
		{"yesterday finished, server covered", yesterday, true, true, true},
		{"previous month finished, server covered", prevMonth, true, true, true},
		{"yesterday not finished (check failed, differed, gap)", yesterday, true, false, false},
		{"previous month not finished", prevMonth, true, false, false},
		{"yesterday finished, shard not flushed lately", yesterday, false, true, false},
		{"a backfill day is the pass's", backfill, true, true, false},
		{"today is open: LiveOwns decides", today, true, true, false},
		{"this month is open", month, true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := LiveFinished(c.w, c.covered, c.finished, start); got != c.want {
				t.Errorf("LiveFinished(%s %s, covered %v, finished %v) = %v, want %v", c.w.Kind, c.w.Label, c.covered, c.finished, got, c.want)
			}
		})
	}
}

// TestPassLeavesFinishedWindows: A is counted live and the reporter finished its yesterday and
// previous month: once its backfill days exist, a pass sends no request at all for A (not its
// guild, not its channels). With only yesterday finished, the pass asks A's guild and channels
// and counts the previous month; once A's shard is no longer flushed, it counts both again.
func TestPassLeavesFinishedWindows(t *testing.T) {
	e := newEnv(t, "2026-11-19T09:00:00Z")
	today := reports.DayOf(e.clock.Now())
	yesterday, prevMonth := today.AddDays(-1).String(), today.MonthOf().AddMonths(-1).String()
	lc := &memLive{counted: map[string]live.Counted{
		guildA: {SinceID: discord.SnowflakeAt(ts("2026-09-01T00:00:00Z")), Flushed: e.clock.Now().Add(-time.Second)},
	}}
	e.col.cfg.Live, e.col.cfg.LiveFresh = lc, 2*time.Minute
	e.pass(t) // the first pass backfills A's days
	e.discord.takeCalls()
	asked := func() (guild, channels, searches int, periods map[string]bool) {
		periods = map[string]bool{}
		for _, c := range e.discord.takeCalls() {
			if c.guildID != guildA {
				continue
			}
			switch c.channelID {
			case "guild":
				guild++
			case "channels":
				channels++
			default:
				searches++
				periods[reports.DayOf(c.from).String()] = true
			}
		}
		return guild, channels, searches, periods
	}
	refresh := func(finished ...string) Result {
		t.Helper()
		e.clock.Add(time.Minute)
		lc.mu.Lock()
		lc.counted[guildA] = live.Counted{SinceID: lc.counted[guildA].SinceID, Flushed: e.clock.Now().Add(-time.Second)}
		lc.finished = map[string]map[string]bool{guildA: {}}
		for _, p := range finished {
			lc.finished[guildA][p] = true
		}
		lc.mu.Unlock()
		res, err := e.col.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := refresh(yesterday, prevMonth)
	if g, c, n, _ := asked(); g+c+n != 0 {
		t.Errorf("both closed windows finished: %d guild, %d channel list, %d search requests for A, want none", g, c, n)
	}
	if res.Finished != 2 || res.Skipped != 1 || res.Live != 2 {
		t.Errorf("finished %d, skipped %d, live %d; want 2, 1, 2", res.Finished, res.Skipped, res.Live)
	}

	res = refresh(yesterday)
	g, c, n, periods := asked()
	if g != 1 || c != 1 || n == 0 {
		t.Errorf("previous month not finished: %d guild, %d channel list, %d searches for A; want 1, 1, some", g, c, n)
	}
	if periods[yesterday] {
		t.Error("yesterday is finished, yet the pass searched it")
	}
	if res.Finished != 1 || res.Skipped != 0 {
		t.Errorf("finished %d, skipped %d; want 1, 0", res.Finished, res.Skipped)
	}

	// The shard is no longer flushed: nothing is live counting's, finished or not.
	e.clock.Add(3 * time.Minute)
	lc.mu.Lock()
	lc.finished = map[string]map[string]bool{guildA: {yesterday: true, prevMonth: true}}
	lc.mu.Unlock()
	res, err := e.col.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, periods := asked(); !periods[yesterday] || res.Finished != 0 || res.Live != 0 {
		t.Errorf("shard gone: yesterday searched %v, finished %d, live %d; want true, 0, 0", periods[yesterday], res.Finished, res.Live)
	}
}

func TestLiveAwaitsCheck(t *testing.T) {
	fresh := 2 * time.Minute
	midnight := ts("2026-11-19T21:00:00Z") // Moscow 20 November begins
	yesterday := reports.Day{Year: 2026, Month: time.November, Day: 19}.Window()
	prevMonth := reports.Month{Year: 2026, Month: time.October}.Window()
	backfill := yesterday
	backfill.Backfill = true
	cases := []struct {
		name    string
		w       reports.Window
		covered bool
		start   time.Time
		want    bool
	}{
		{"yesterday, the pass at midnight", yesterday, true, midnight, true},
		{"yesterday, just before twice LIVE_GAP_DELAY", yesterday, true, midnight.Add(2*fresh - time.Second), true},
		{"yesterday, twice LIVE_GAP_DELAY after: checked or the pass's", yesterday, true, midnight.Add(2 * fresh), false},
		{"yesterday, server not covered", yesterday, false, midnight, false},
		{"a backfill day", backfill, true, midnight, false},
		{"a month closed long ago", prevMonth, true, midnight, false},
		{"a window still open", yesterday, true, midnight.Add(-time.Minute), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := LiveAwaitsCheck(c.w, c.covered, c.start, fresh); got != c.want {
				t.Errorf("LiveAwaitsCheck(%s at %s) = %v, want %v", c.w.Label, c.start, got, c.want)
			}
		})
	}
}
