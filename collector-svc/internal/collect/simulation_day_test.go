package collect_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/collector-svc/internal/livereport"
	"forumstats.local/shared/reports"
)

// everyServerLive is live counting as the pass sees it when the gateway is connected all day:
// every catalog server counted for two months, its shard flushed just now.
type everyServerLive struct {
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
// before the month, no gap, and in every period the count the simulated search answers (7), so
// that a closed day's check agrees with the search in one request, as in a steady state.
type simLive struct{ since uint64 }

func (l simLive) Coverage(context.Context, uint64) (live.Coverage, bool, error) {
	return live.Coverage{SinceID: l.since}, true, nil
}
func (simLive) Sums(context.Context, uint64, int64, int64) (map[uint64]int64, error) {
	return map[uint64]int64{0: 7}, nil
}
func (simLive) UnfilledGaps(context.Context, time.Time) ([]live.GuildGap, error) { return nil, nil }

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
		if gateway {
			cfg.Live, cfg.LiveFresh = everyServerLive{ids: ids, since: since}, livereport.DefaultGapDelay
		}
		col := collect.New(cfg)
		ctx, cancel := context.WithCancel(context.Background())
		reporterDone := make(chan struct{})
		if gateway {
			rep := livereport.New(livereport.Config{Discord: sim.Client, Channels: col, Live: simLive{since: since},
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
			}
		}
		cancel()
		<-reporterDone
		r.total, r.limited = sim.Discord.Requests()
	})
	r.real = time.Since(began)
	return r
}

// TestSimulationDay: a Moscow day of the collector over 1,000 servers × 30 channels (answers
// after 300 ms, search buckets of 10/s per server, the cap of 50), in virtual time, search only
// and with the gateway connected all day. With the gateway, the passes leave today's and this
// month's windows of every server to the reporter of live counts: a steady pass asks only the
// guild, its channels and the totals of yesterday and the previous month (their stored channel
// counts kept), and the reporter its channel lists every 10 minutes and one search a server as
// the day closes. The REST requests of both days and their ratio are logged.
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
	search := simulateDay(t, servers, false)
	t.Logf("search only, %d servers: %d passes, %d requests in the day (%d × 429), real time %s",
		servers, search.passes, search.total, search.limited, search.real.Round(time.Millisecond))
	gw := simulateDay(t, servers, true)
	ratio := float64(gw.total) / float64(search.total)
	t.Logf("gateway, %d servers: %d passes, %d requests in the day (passes %d, reporter %d; %d × 429), ratio to search only %.3f, real time %s",
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
	// The first pass counts yesterday's and the previous month's channels; every later one asks
	// the guild, its channels and the two closed totals of each server.
	if want := servers*(2+2*31) + (gw.passes-1)*servers*4; gw.passRequests != want {
		t.Errorf("gateway: the passes sent %d requests, want %d", gw.passRequests, want)
	}
}
