package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

// TestServeCountsLive: serve with DISCORD_GATEWAY=on counts the fake's messages live, exactly
// (the stored server totals equal the fake's count since counting began), through a dropped
// connection and a zombie one, and through a stop (SIGTERM: a last flush, the connection closed
// with 4000) and a restart that resumes every session instead of identifying. Until the stop,
// today's and this month's reports are written from live counts (the REST pass ran once, at
// start, before the catalog was set) and equal the fake's counts of the day and the month.
func TestServeCountsLive(t *testing.T) {
	const shards = 2
	t0 := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
	clock := testutil.NewClock(t0)
	// Exact counts need every session to survive. The heartbeat interval runs on the wall clock:
	// the fake ends a session silent for three intervals (4009), and a client that took its
	// connection for a zombie (a heartbeat's ACK stuck behind a burst of dispatches it reads
	// slowly under -race) stops beating on it and waits up to a second for its close, so three
	// intervals must well outlast one interval and that second on a loaded machine.
	fake := fakediscord.New(fakediscord.Options{Guilds: 4, MessageRate: 500, Token: "secret", Clock: clock.Now,
		Gateway: fakediscord.GatewayOptions{Shards: shards, MaxConcurrency: shards, IdentifyInterval: time.Millisecond,
			HeartbeatInterval: 2 * time.Second, ResumeWindow: time.Hour}})
	srv := httptest.NewServer(fake.Handler())
	defer func() { srv.Close(); fake.Close() }()

	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "stats.db")
	gdb, err := migrate.Open(context.Background(), dbURL, nil, true, reports.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(gdb)
	for k, v := range map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DISCORD_TOKEN": "secret", "DATABASE_URL": dbURL, "DISCORD_API_BASE": srv.URL + "/api/v10",
		"DISCORD_GATEWAY": "on", "LIVE_FLUSH_INTERVAL": "100ms", "LIVE_SHARD_LOCK_RETRY": "200ms", "REFRESH_INTERVAL": "1h"} {
		t.Setenv(k, v)
	}
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	// The service's log, shown when the test fails: which shard stalled, and why.
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	serve := func() (stop func()) {
		a, err := New(context.Background(), cfg, log, WithDB(gdb), WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		return func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("serve did not stop")
			}
			a.Close()
		}
	}
	eventually := func(what string, ok func() (bool, string)) {
		t.Helper()
		// Generous: a shard whose resumes failed while the fake did not acknowledge heartbeats may
		// be in its reconnect backoff (up to several seconds) when the test looks.
		deadline := time.Now().Add(45 * time.Second)
		for {
			done, state := ok()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s", what, state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// reportsToo: today's and this month's reports must come from live counts as well (the REST
	// pass runs once at start, REFRESH_INTERVAL apart, before the clock moves).
	reportsToo := false
	exact := func(d time.Duration) {
		t.Helper()
		clock.Add(d)
		fake.Pump()
		if reportsToo {
			defer eventually("today's and this month's reports equal to the fake's", func() (bool, string) {
				return liveReportsMatch(gdb, fake, t0, clock.Now())
			})
		}
		eventually("live counts equal to the fake's", func() (bool, string) {
			if st := fake.GatewayStats(); st.Identifies > shards {
				// Not worth waiting for: a new session never receives what the ended one was
				// dispatched, so exact live counts need every session to survive.
				t.Fatalf("a session was lost (%d identifies for %d shards), so its messages can no longer be counted live: %+v", st.Identifies, shards, st)
			}
			return liveTotalsMatch(gdb, fake, t0, clock.Now())
		})
	}

	stop := serve()
	eventually("every server counted", func() (bool, string) {
		var n int64
		gdb.Table("live_guilds").Count(&n)
		return n == int64(len(fake.Catalog())), fmt.Sprint(n)
	})
	// The catalog is set once the start's REST pass is over, so that every later report of
	// today and this month is written from live counts.
	eventually("the start's pass over", func() (bool, string) {
		return strings.Contains(logs.String(), `msg="pass finished"`), "no pass finished yet"
	})
	for _, c := range fake.Catalog() {
		if err := gdb.Create(&reports.CatalogServer{Number: c.Number, Name: c.Name, GuildID: c.GuildID}).Error; err != nil {
			t.Fatal(err)
		}
	}
	reportsToo = true
	exact(2 * time.Minute)

	fake.DropConnections()
	exact(time.Minute)

	// Until every shard has resumed after a zombie connection. Each shard is watched on its own:
	// one whose resumes keep failing while heartbeats go unacknowledged backs off longer and
	// longer, and must be seen to resume before the fake acknowledges again.
	before := liveResumes(t)
	fake.SetZombie(true)
	clock.Add(time.Minute)
	fake.Pump()
	eventually("every shard resumed after a zombie connection", func() (bool, string) {
		now := liveResumes(t)
		for s := range shards {
			if now[strconv.Itoa(s)] <= before[strconv.Itoa(s)] {
				return false, fmt.Sprintf("resumes %v, before %v", now, before)
			}
		}
		return true, ""
	})
	fake.SetZombie(false)
	exact(time.Minute)

	// The restart's REST pass writes today's and this month's reports too, from the search.
	reportsToo = false
	stop()
	// The fake sees the closes a moment after the client has sent them.
	eventually("after the stop, no connection open and every session resumable", func() (bool, string) {
		st := fake.GatewayStats()
		return st.Open == 0 && st.Sessions == shards, fmt.Sprintf("%+v", st)
	})
	clock.Add(time.Minute) // messages while no process listens: replayed on resume
	fake.Pump()
	stop = serve()
	defer stop()
	exact(time.Minute)
	if st := fake.GatewayStats(); st.Identifies != shards {
		t.Fatalf("%d identifies, want %d: the restart must resume: %+v", st.Identifies, shards, st)
	}
}

// liveReportsMatch compares today's and this month's stored reports of each server with the
// fake's count of the day and of the month up to now, less the messages stamped in the very
// millisecond counting began at t0: the search covers what came before that moment and the
// session what came after it (the fake's session starts after its clock reading), and the
// virtual clock, standing still at an hour's start, puts a message of every channel there.
func liveReportsMatch(gdb *gorm.DB, fake *fakediscord.Server, t0, now time.Time) (bool, string) {
	day, month := reports.DayOf(now), reports.MonthOf(now)
	diff := ""
	for _, c := range fake.Catalog() {
		var d reports.DailyReport
		var m reports.MonthlyReport
		if err := gdb.Where("guild_id = ? AND day = ?", c.GuildID, day.String()).Limit(1).Find(&d).Error; err != nil {
			return false, err.Error()
		}
		if err := gdb.Where("guild_id = ? AND month = ?", c.GuildID, month.String()).Limit(1).Find(&m).Error; err != nil {
			return false, err.Error()
		}
		end := now.Add(time.Millisecond)
		atStart := fake.Count(c.GuildID, "", t0, t0.Add(time.Millisecond))
		wantD := fake.Count(c.GuildID, "", day.Start(), end) - atStart
		wantM := fake.Count(c.GuildID, "", month.Start(), end) - atStart
		if d.Status != reports.StatusOK || d.TotalMessages != wantD || m.Status != reports.StatusOK || m.TotalMessages != wantM {
			diff += fmt.Sprintf(" guild %s: day %s %q %d, fake %d; month %s %q %d, fake %d;", c.GuildID,
				day, d.Status, d.TotalMessages, wantD, month, m.Status, m.TotalMessages, wantM)
		}
	}
	return diff == "", diff
}

// syncBuffer is a bytes.Buffer that goroutines may write at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// liveResumes reads collector_live_resumes_total by shard from the default registry.
func liveResumes(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "collector_live_resumes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "shard" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// liveTotalsMatch compares the stored server totals with the fake's count of the messages made
// after counting began at t0, up to now.
func liveTotalsMatch(gdb *gorm.DB, fake *fakediscord.Server, t0, now time.Time) (bool, string) {
	var rows []struct {
		GuildID  string
		Messages int64
	}
	if err := gdb.Table("live_counts").Select("guild_id, SUM(messages) AS messages").Where("channel_id = ''").
		Group("guild_id").Find(&rows).Error; err != nil {
		return false, err.Error()
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[r.GuildID] = r.Messages
	}
	diff, total := "", int64(0)
	for _, c := range fake.Catalog() {
		want := fake.Count(c.GuildID, "", t0.Add(time.Millisecond), now.Add(time.Millisecond))
		total += want
		if got[c.GuildID] != want {
			diff += fmt.Sprintf(" guild %s: stored %d, fake %d;", c.GuildID, got[c.GuildID], want)
		}
	}
	if total == 0 {
		return false, "no message in the window"
	}
	return diff == "", diff
}
