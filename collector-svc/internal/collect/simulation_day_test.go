package collect_test

import (
	"context"
	"flag"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/collector-svc/internal/livereport"
	"forumstats.local/shared/reports"
)

// simFinished is the record of finished closed periods that the reporter writes and the pass
// reads (the live_finished table), shared by everyServerLive and simLive.
type simFinished struct {
	mu   sync.Mutex
	done map[string]map[string]bool // guild id → period → finished
}

func (f *simFinished) Finished(_ context.Context, periods []string) (map[string]map[string]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]map[string]bool{}
	for g, ps := range f.done {
		for _, p := range periods {
			if ps[p] {
				if out[g] == nil {
					out[g] = map[string]bool{}
				}
				out[g][p] = true
			}
		}
	}
	return out, nil
}

func (f *simFinished) Finish(_ context.Context, guild uint64, period string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := strconv.FormatUint(guild, 10)
	if f.done[g] == nil {
		f.done[g] = map[string]bool{}
	}
	f.done[g][period] = true
	return nil
}

func (f *simFinished) Unfinish(_ context.Context, guild uint64, period string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.done[strconv.FormatUint(guild, 10)], period)
	return nil
}

func (f *simFinished) FinishedOf(_ context.Context, guild uint64, periods []string) (map[string]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for _, p := range periods {
		if f.done[strconv.FormatUint(guild, 10)][p] {
			out[p] = true
		}
	}
	return out, nil
}

// everyServerLive is live counting as the pass sees it when the gateway is connected all day:
// every catalog server counted for two months, its shard flushed just now.
type everyServerLive struct {
	*simFinished
	ids   []string
	since uint64
}

func (l everyServerLive) Counted(context.Context) (map[string]live.Counted, error) {
	out := make(map[string]live.Counted, len(l.ids))
	for _, id := range l.ids {
		out[id] = live.Counted{SinceID: l.since, Flushed: time.Now()}
	}
	return out, nil
}

// simLive is the live store as the reporter reads it: every server counted whole since long
// before the month, no gap, its channels listed by a GUILD_CREATE (the 30 the simulated Discord
// lists), and in every period the count the simulated search answers (7), so that a closed day's
// check agrees with the search in one request, as in a steady state.
type simLive struct {
	*simFinished
	since    uint64
	channels int
}

func (l simLive) Coverage(context.Context, uint64) (live.Coverage, bool, error) {
	return live.Coverage{SinceID: l.since}, true, nil
}
func (simLive) Sums(context.Context, uint64, int64, int64) (map[uint64]int64, error) {
	return map[uint64]int64{0: 7}, nil
}
func (simLive) UnfilledGaps(context.Context, time.Time) ([]live.GuildGap, error) { return nil, nil }
func (l simLive) GuildChannels(context.Context, uint64) ([]discord.Channel, bool, error) {
	out := make([]discord.Channel, l.channels)
	for i := range out {
		out[i] = discord.Channel{ID: strconv.Itoa(1000 + i), Name: "c" + strconv.Itoa(i)}
	}
	return out, true, nil
}

// ownsAll: every shard is flushed in this process.
type ownsAll struct{}

func (ownsAll) Owns(uint64) bool                                { return true }
func (ownsAll) Fill(uint64, live.Gap, map[live.Key]int64) error { return nil }

// dayResult sums up a simulated Moscow day of a collector.
type dayResult struct {
	passes, passRequests, total, limited int
	liveWindows, written                 int
	real                                 time.Duration
}

// simulateDay runs the collector of servers × 30 channels for one Moscow day in virtual time:
// a pass, REFRESH_MINUTES (10) of pause after its end, and so on while the day lasts; with
// gateway, live counting covers every server (its shards flushed all day) and the reporter of
// live counts runs beside the passes, over the same client and store, as serve runs them.
func simulateDay(t *testing.T, servers int, gateway bool) (r dayResult) {
	began := time.Now()
	day := reports.Day{Year: 2026, Month: time.November, Day: 19}
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(day.Start()))
		sim, err := collect.NewSim(servers, 30, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		since := discord.SnowflakeAt(day.Start().Add(-60 * 24 * time.Hour))
		cfg := collect.Config{Discord: sim.Client, Store: sim.Store, MaxRPS: 50, RefreshMinutes: 10}
		ids := make([]string, servers)
		for i := range ids {
			ids[i] = strconv.Itoa(100000 + i)
		}
		// The steady state: the reporter closed the previous month (its last day's check, and
		// every other day's, agreed with the search); yesterday is checked LIVE_GAP_DELAY into
		// the simulated day.
		finished := &simFinished{done: map[string]map[string]bool{}}
		prev := day.MonthOf().AddMonths(-1)
		for _, id := range ids {
			finished.done[id] = map[string]bool{prev.String(): true}
			for d := prev.First(); d.MonthOf() == prev; d = d.AddDays(1) {
				finished.done[id][d.String()] = true
			}
		}
		if gateway {
			cfg.Live, cfg.LiveFresh = everyServerLive{simFinished: finished, ids: ids, since: since}, livereport.DefaultGapDelay
		}
		col := collect.New(cfg)
		ctx, cancel := context.WithCancel(context.Background())
		reporterDone := make(chan struct{})
		if gateway {
			rep := livereport.New(livereport.Config{Discord: sim.Client, Channels: col, Live: simLive{simFinished: finished, since: since, channels: 30},
				Reports: sim.Reports, Filler: ownsAll{}, GapDelay: livereport.DefaultGapDelay, SearchEvery: 10 * time.Minute})
			go func() {
				defer close(reporterDone)
				rep.Run(ctx, live.DefaultFlushInterval)
			}()
		} else {
			close(reporterDone)
		}
		for time.Now().Before(day.End()) {
			res, err := col.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r.passes++
			r.passRequests += int(res.Requests)
			r.liveWindows += res.Live
			r.written += res.Written
			time.Sleep(10 * time.Minute)
		}
		if gateway {
			// A last round of the reporter after the passes: then every server's today's and this
			// month's reports are the reporter's, and fresh for readers (they turn stale three
			// refresh intervals after they were written).
			time.Sleep(10 * time.Minute)
			now := time.Now()
			for _, id := range ids {
				for _, w := range []reports.Window{reports.DayOf(now).Window(), reports.MonthOf(now).Window()} {
					row, ok := sim.Reports.Stored(w.Kind, id, w.Label)
					if !ok || row.Status != reports.StatusOK || row.TotalMessages != 7 || now.After(reports.TurnsStale(row.GeneratedAt, 10)) {
						t.Fatalf("server %s %s %s at %s: %+v (stored %v), want written ok from live counts, fresh",
							id, w.Kind, w.Label, now, row, ok)
					}
				}
				// Yesterday, finished by the reporter's check, holds the simulated search's count.
				y := reports.DayOf(now).AddDays(-1)
				if row, ok := sim.Reports.Stored(reports.KindDay, id, y.String()); !ok || row.Status != reports.StatusOK || row.TotalMessages != 7 {
					t.Fatalf("server %s yesterday %s: %+v (stored %v), want ok with 7", id, y, row, ok)
				}
				if done, _ := finished.FinishedOf(ctx, mustUint(t, id), []string{y.String()}); !done[y.String()] {
					t.Fatalf("server %s: yesterday %s not recorded finished", id, y)
				}
			}
		}
		cancel()
		<-reporterDone
		r.total, r.limited = sim.Discord.Requests()
	})
	r.real = time.Since(began)
	return r
}

// simServers sets the servers of TestSimulationDay (go test -run '^TestSimulationDay$'
// ./collector-svc/internal/collect/ -args -sim-servers=1000).
var simServers = flag.Int("sim-servers", 0, "servers of TestSimulationDay (0: 200, 10 under -race or -short)")

// TestSimulationDay: a Moscow day of the collector over servers × 30 channels (answers after
// 300 ms, search buckets of 10/s per server, the cap of 50), in virtual time, search only and
// with the gateway connected all day. With the gateway, the passes leave today's and this month's
// windows of every server to the reporter of live counts, and the closed windows it finished:
// the previous month (finished before the day) and yesterday once the reporter checked it, two
// minutes into the day; the first pass, at midnight, leaves yesterday to that check. No pass
// sends a request, not even a server's guild or channels. The reporter lists no
// channel over REST (the gateway listed them) and sends one search a server for each day it
// checks. A day's REST requests with the gateway must be at most 5 % of the search-only day's.
func TestSimulationDay(t *testing.T) {
	// 1,000 servers take four and a half minutes of real time (the search-only day alone 3.03
	// million requests); 200 keep the test near a minute.
	servers := 200
	if collect.RaceEnabled {
		servers = 10
	}
	if testing.Short() {
		servers = 10
	}
	if *simServers > 0 {
		servers = *simServers
	}
	search := simulateDay(t, servers, false)
	t.Logf("search only, %d servers: %d passes, %d requests in the day (%d × 429), real time %s",
		servers, search.passes, search.total, search.limited, search.real.Round(time.Millisecond))
	gw := simulateDay(t, servers, true)
	ratio := float64(gw.total) / float64(search.total)
	t.Logf("gateway, %d servers: %d passes, %d requests in the day (passes %d, reporter %d; %d × 429), ratio to search only %.4f, real time %s",
		servers, gw.passes, gw.total, gw.passRequests, gw.total-gw.passRequests, gw.limited, ratio, gw.real.Round(time.Millisecond))
	if search.limited != 0 || gw.limited != 0 {
		t.Errorf("429 answers: %d search only, %d gateway", search.limited, gw.limited)
	}
	if search.total != search.passRequests {
		t.Errorf("search only: %d requests reached Discord, the passes counted %d", search.total, search.passRequests)
	}
	// Every pass leaves both open windows of every server to live counting.
	if want := 2 * servers * gw.passes; gw.liveWindows != want {
		t.Errorf("gateway: %d windows left to live counting, want %d", gw.liveWindows, want)
	}
	// The first pass, at midnight, leaves yesterday to its check, due two minutes later; the later
	// ones find every closed window finished: no pass sends anything. (At 1,000 servers the
	// reporter's round of checks, one request at a time at 300 ms, outlasts the pause before the
	// second pass, which counts the servers not checked yet: only the ratio holds there.)
	if servers <= 200 && gw.passRequests != 0 {
		t.Errorf("gateway: the passes sent %d requests, want none", gw.passRequests)
	}
	// The reporter: one search a server for each day it checks: the day before yesterday (a
	// process's first check, at midnight), yesterday LIVE_GAP_DELAY later, and the simulated day
	// itself, as it closes before the last round.
	if want := 3 * servers; gw.total-gw.passRequests != want {
		t.Errorf("gateway: the reporter sent %d requests, want %d", gw.total-gw.passRequests, want)
	}
	if ratio > 0.05 {
		t.Errorf("gateway: a day's REST requests are %.4f of a search-only day's, want at most 0.05", ratio)
	}
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
