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
	mu      sync.Mutex
	counted map[string]live.Counted
	err     error
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
