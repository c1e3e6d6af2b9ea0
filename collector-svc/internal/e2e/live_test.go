package e2e

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/shared/testutil"
)

// TestLiveCountsAcrossReplicas runs collector-svc serve with DISCORD_GATEWAY=on, as replicas over
// one PostgreSQL database, against a fake Discord with four gateway shards whose clock the test
// moves (in this process, so that the fake's count of the messages dispatched is exact). After
// every step the stored server totals equal the fake's count of the messages made since each
// server's counting began: two replicas sharing the shards, two each; one killed with SIGKILL
// (its shards resumed by the other from the stored checkpoints); a third started (the shards
// split again); the other stopped with SIGTERM (a last flush, connections closed with 4000) and
// its shards resumed by the third. No session is ever identified again.
func TestLiveCountsAcrossReplicas(t *testing.T) {
	const shards = 4
	clock := testutil.NewClock(time.Now().UTC().Truncate(time.Millisecond))
	fake := fakediscord.New(fakediscord.Options{Guilds: 6, MessageRate: 300, Token: "secret", Clock: clock.Now,
		Gateway: fakediscord.GatewayOptions{Shards: shards, MaxConcurrency: shards, IdentifyInterval: time.Millisecond,
			ResumeWindow: time.Hour}})
	srv := httptest.NewServer(fake.Handler())
	defer func() { srv.Close(); fake.Close() }()
	dbURL := testutil.NewDatabase(t)
	serveEnv := func(addr string) []string {
		return env("DATABASE_URL="+dbURL, "DISCORD_API_BASE="+srv.URL+"/api/v10", "DISCORD_TOKEN=secret",
			"DISCORD_GATEWAY=on", "LIVE_FLUSH_INTERVAL=200ms", "LIVE_SHARD_LOCK_RETRY=500ms", "REFRESH_INTERVAL=1h", "HTTP_ADDR="+addr)
	}
	replica := func(name string) (*proc, string) {
		addr := freeAddr(t)
		p := start(t, "collector "+name, collectorBin, serveEnv(addr))
		waitHTTP(t, "http://"+addr+"/readyz", p)
		return p, addr
	}
	held := func(addrs ...string) float64 {
		var n float64
		for _, a := range addrs {
			n += metrics(a)["collector_live_shards_held"]
		}
		return n
	}
	gdb := testutil.OpenDB(t, dbURL)
	exact := func(step string, d time.Duration) {
		t.Helper()
		clock.Add(d)
		fake.Pump()
		to := clock.Now().Add(time.Millisecond)
		var diff string
		deadline := time.Now().Add(30 * time.Second)
		for {
			var guilds []struct {
				GuildID string
				SinceID int64
			}
			var totals []struct {
				GuildID  string
				Messages int64
			}
			err1 := gdb.Table("live_guilds").Find(&guilds).Error
			err2 := gdb.Table("live_counts").Select("guild_id, SUM(messages) AS messages").Where("channel_id = ''").Group("guild_id").Find(&totals).Error
			got := map[string]int64{}
			for _, r := range totals {
				got[r.GuildID] = r.Messages
			}
			diff = fmt.Sprint(err1, err2)
			if err1 == nil && err2 == nil {
				diff = ""
				if len(guilds) != len(fake.Catalog()) {
					diff = fmt.Sprintf("%d servers counted", len(guilds))
				}
				var all int64
				for _, g := range guilds {
					want := fake.Count(g.GuildID, "", discord.SnowflakeTime(uint64(g.SinceID)), to)
					all += want
					if got[g.GuildID] != want {
						diff += fmt.Sprintf(" guild %s: stored %d, fake %d;", g.GuildID, got[g.GuildID], want)
					}
				}
				if all < 100 {
					t.Fatalf("%s: only %d messages to count: the test needs more", step, all)
				}
			}
			if diff == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: live counts differ from the fake's: %s", step, diff)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	a, addrA := replica("A")
	b, addrB := replica("B")
	waitFor(t, "the shards split over A and B", 30*time.Second, func() bool { return held(addrA) == shards/2 && held(addrB) == shards/2 })
	waitFor(t, "every server counted", 30*time.Second, func() bool {
		var n int64
		gdb.Table("live_guilds").Count(&n)
		return n == int64(len(fake.Catalog()))
	})
	exact("two replicas", 2*time.Minute)

	// SIGKILL: A flushes nothing more; B takes its shards and resumes their sessions.
	heldByA := metrics(addrA)["collector_live_shards_held"]
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	killed := time.Now()
	clock.Add(30 * time.Second) // dispatched while A's shards have no connection
	fake.Pump()
	waitFor(t, "B to hold every shard", 15*time.Second, func() bool { return held(addrB) == shards })
	t.Logf("B held A's %v shards %s after A was killed (LIVE_SHARD_LOCK_RETRY 500ms)", heldByA, time.Since(killed).Round(time.Millisecond))
	exact("after A was killed (it held "+strconv.Itoa(int(heldByA))+" shards)", time.Minute)

	// SIGTERM: B flushes and closes with 4000; C resumes every session.
	_, addrC := replica("C")
	waitFor(t, "the shards split over B and C", 30*time.Second, func() bool { return held(addrB) == shards/2 && held(addrC) == shards/2 })
	exact("B and C", time.Minute)
	b.stop()
	waitFor(t, "C to hold every shard", 15*time.Second, func() bool { return held(addrC) == shards })
	exact("after B stopped", time.Minute)
	if st := fake.GatewayStats(); st.Identifies != shards {
		t.Fatalf("%d identifies, want %d (every later session resumed): %+v", st.Identifies, shards, st)
	}
}
