//go:build faults

package systest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"forumstats.local/shared/reports"
	"forumstats.local/tools/stack"
)

// TestLiveCountsSurviveSIGKILL: the built collector-svc, counting live (DISCORD_GATEWAY=on) under
// a steady stream of messages from the fake (a process of its own, which outlives the
// collectors), is killed with SIGKILL every 2–6 s (at random: in the middle of a flush, of a
// resume, of a report...) and started again, for a minute. Then one last collector runs: the
// fake's gateway is held so that the stream ends at a known moment, and once everything is
// flushed the collector is stopped with SIGTERM (its last flush). Every server's stored live
// total and every channel's count then equal the fake's exact count of the messages made since the
// server's counting began, and today's report of every catalog server, written from live counts,
// equals the fake's count of the day: no message was lost or counted twice across the kills.
func TestLiveCountsSurviveSIGKILL(t *testing.T) {
	const (
		guilds   = 3
		token    = "reliab-live-crash-token"
		killsFor = 60 * time.Second
	)
	ctx := context.Background()
	pg := postgres(t)
	name := dbName("livecrash")
	dbURL, err := pg.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	colBin := bin(t, stack.Collector)
	fake, err := stack.StartFakeDiscord(colBin, tempDir(t), "--guilds", fmt.Sprint(guilds), "--message-rate", "10000",
		"--token", token, "--rate-limit", "0", "--bucket-limit", "0", "--latency", "0", "--index-warmup", "0",
		"--resume-window", "10m")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Stop(5 * time.Second) })
	env := []string{"DATABASE_URL=" + dbURL, "DISCORD_API_BASE=" + fake.APIBase(), "DISCORD_TOKEN=" + token,
		"CATALOG_FILE=" + fake.Catalog, "DISCORD_GATEWAY=on", "LIVE_FLUSH_INTERVAL=1s", "LIVE_SHARD_LOCK_RETRY=200ms",
		"LIVE_GAP_DELAY=2s", "REFRESH_INTERVAL=1h", "DISCORD_MAX_RPS=1000",
		// Warnings only, so that the tail shown when the test fails says what went wrong.
		"LOG_LEVEL=warn"}
	conn, err := pg.Connect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>32))
	t.Logf("kill intervals from seed %d", seed)
	var (
		kills   int
		lastOut string
		seqs    []int64
	)
	for deadline := time.Now().Add(killsFor); time.Now().Before(deadline); {
		svc, err := stack.StartService(stack.Collector, colBin, env)
		if err != nil {
			t.Fatalf("start collector-svc after %d kills: %v\nthe killed one's output:\n%s", kills, err, tailLines(lastOut, 40))
		}
		if kills == 0 {
			// The first collector's pass (it writes today's reports from the search) is recorded:
			// the next pass is due REFRESH_INTERVAL after it, so no later collector runs one and
			// the reports from live counts are the last written.
			waitLive(t, "the first collector's pass", 60*time.Second, func() (bool, string) {
				passes, err := stack.Metric(ctx, svc.URL+"/metrics", "collector_passes_total")
				return err == nil && passes >= 1, fmt.Sprintf("%v passes (%v)", passes, err)
			})
		}
		time.Sleep(2*time.Second + time.Duration(rng.Int64N(int64(4*time.Second))))
		svc.Kill()
		kills++
		lastOut = svc.Output()
		cps, err := stack.LiveCheckpoints(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, cps[0].Seq)
	}
	st, err := fake.GatewayStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d collectors killed; the stored checkpoint after each kill: %v; gateway: %+v", kills, seqs, st)
	if len(seqs) < 2 || seqs[len(seqs)-1] <= seqs[0] || st.Resumes == 0 {
		t.Fatalf("the kills left no resumed session or no progress (checkpoints %v, %d resumes): the test proves nothing", seqs, st.Resumes)
	}

	// The last collector, until the stream ends at a known moment.
	svc := service(t, stack.Collector, env...)
	waitLive(t, "the last collector's shard", 60*time.Second, func() (bool, string) {
		held, err := stack.Metric(ctx, svc.URL+"/metrics", "collector_live_shards_held")
		return err == nil && held == 1, fmt.Sprintf("held %v (%v)", held, err)
	})
	if err := fake.Hold(ctx, true); err != nil {
		t.Fatal(err)
	}
	end, err := fake.Pump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	day := reports.DayOf(end.Until)
	if reports.DayOf(end.Until.Add(-killsFor-time.Minute)) != day {
		t.Fatalf("the run crossed Moscow midnight (%s): run it again", end.Until)
	}
	waitLive(t, "the last messages flushed, every gap filled and today's reports written from live counts", 60*time.Second, func() (bool, string) {
		cps, err := stack.LiveCheckpoints(ctx, conn)
		if err != nil {
			return false, err.Error()
		}
		if want, ok := end.Sessions[cps[0].SessionID]; !ok || cps[0].Seq != want {
			return false, fmt.Sprintf("checkpoint %+v, sessions at the end %v", cps[0], end.Sessions)
		}
		var unfilled int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM live_gaps WHERE NOT filled`).Scan(&unfilled); err != nil || unfilled > 0 {
			return false, fmt.Sprintf("%d unfilled gaps (%v)", unfilled, err)
		}
		diff, err := todayDiffers(ctx, conn, fake, day, end)
		if err != nil {
			return false, err.Error()
		}
		return diff == "", diff
	})
	svc.Stop(30 * time.Second)
	if code := svc.ExitCode(); code != 0 {
		t.Fatalf("collector-svc exited %d on SIGTERM:\n%s", code, tailLines(svc.Output(), 40))
	}

	check, err := stack.CheckLiveCounts(ctx, conn, fake, fake.Guilds, end.BeganTimes(), end.Until)
	if err != nil {
		t.Fatal(err)
	}
	if !check.Exact() || check.Fake < 1000 {
		t.Fatalf("after %d SIGKILLs, live counts: %s (want equal, over at least 1,000 messages)", kills, check)
	}
	diff, err := todayDiffers(ctx, conn, fake, day, end)
	if err != nil || diff != "" {
		t.Fatalf("after the stop, today's reports: %s %v", diff, err)
	}
	report(t, "live counts after %d SIGKILLs in %s: %s; today's reports equal the fake's", kills, killsFor, check)
}

// todayDiffers compares today's stored report of every catalog server with the fake's count of
// the day up to the end of the stream, and says what differs ("" when nothing does). The messages
// that no session could deliver, made from a server's start of counting to the start of the
// session that delivered its GUILD_CREATE (stack.CountedFrom), are neither counted live nor
// searched.
func todayDiffers(ctx context.Context, conn *pgx.Conn, fake *stack.FakeDiscord, day reports.Day, end stack.Pumped) (string, error) {
	since, err := stack.LiveSince(ctx, conn)
	if err != nil {
		return "", err
	}
	var diffs []string
	for _, g := range fake.Guilds {
		want, err := fake.Count(ctx, g, "", day.Start(), end.Until)
		if err != nil {
			return "", err
		}
		if s, ok := since[g]; ok {
			undelivered, err := fake.Count(ctx, g, "", s, stack.CountedFrom(s, end.BeganTimes()))
			if err != nil {
				return "", err
			}
			want -= undelivered
		}
		var status string
		var total int64
		err = conn.QueryRow(ctx, `SELECT status, total_messages FROM daily_reports WHERE guild_id = $1 AND day = $2`, g, day.String()).Scan(&status, &total)
		if err == pgx.ErrNoRows {
			diffs = append(diffs, fmt.Sprintf("server %s: no report of %s", g, day))
			continue
		}
		if err != nil {
			return "", err
		}
		if status != reports.StatusOK || total != want {
			diffs = append(diffs, fmt.Sprintf("server %s: %s %d, fake %d", g, status, total, want))
		}
	}
	return strings.Join(diffs, "; "), nil
}

// waitLive polls cond every 100 ms until it holds, and fails with its last word after timeout.
func waitLive(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
