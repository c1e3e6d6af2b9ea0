package httpapi_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

// fallbacks sums stats_cache_fallback_total by reason.
func fallbacks(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "stats_cache_fallback_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func redisAddr(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// Redis dies, then turns slow, in the middle of serving: every answer is
// still a 200 from the database, and the fallback metric counts it.
func TestRedisDiesMidway(t *testing.T) {
	gdb := pgDB(t)
	proxy, err := testutil.NewProxy(redisAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	direct := newRedis(t, "")
	s := newStack(t, gdb, stackOptions{redis: newRedis(t, proxy.Addr())})
	reference := newStack(t, gdb, stackOptions{direct: true})

	check := func(target string) {
		t.Helper()
		start := time.Now()
		got, want := do(t, "GET", s.url+target), do(t, "GET", reference.url+target)
		if got.status != 200 || got.body != want.body {
			t.Fatalf("%s: %d %s\nwant %s", target, got.status, got.body, want.body)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s took %v", target, d)
		}
	}
	week := func(date string) string { return statsPath + "?period=week&date=" + date }

	check(week("2026-11-20"))
	keys, err := direct.Keys(context.Background(), escapeGlob(s.prefix)+"*").Result()
	if err != nil || len(keys) != 2 { // the answer under its generation, and its stale copy
		t.Fatalf("the answer was not stored in Redis: %v %v", keys, err)
	}

	before := fallbacks(t)
	proxy.SetDown(true)
	for _, d := range []string{"2026-11-19", "2026-11-18", "2026-11-17"} {
		check(week(d)) // L1 misses: Redis is asked, fails, the database answers
	}
	check(week("2026-11-20")) // still in L1
	down := fallbacks(t)
	if down["error"]+down["timeout"] < before["error"]+before["timeout"]+3 {
		t.Fatalf("fallbacks while down: before %v, after %v", before, down)
	}

	proxy.SetDown(false)
	proxy.SetLatency(200 * time.Millisecond)
	for _, d := range []string{"2026-11-16", "2026-11-15"} {
		check(week(d))
	}
	slow := fallbacks(t)
	if slow["timeout"] < down["timeout"]+2 {
		t.Fatalf("timeouts while slow: before %v, after %v", down, slow)
	}

	// Healthy again: answers are stored in Redis again.
	proxy.SetLatency(0)
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		check(statsPath + "?period=day&date=2026-11-" + []string{"01", "02", "03", "04", "05", "06", "07", "08", "09", "10"}[i%10])
		keys, _ = direct.Keys(context.Background(), escapeGlob(s.prefix)+"*").Result()
		if len(keys) > 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis not used again after recovery: %v", keys)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func addMonthly(t *testing.T, gdb *gorm.DB, month string, bump bool) {
	t.Helper()
	err := gdb.Transaction(func(tx *gorm.DB) error {
		r := reports.MonthlyReport{GuildID: betaID, Month: month, GeneratedAt: time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC), Status: "ok", TotalMessages: 42}
		if err := tx.Create(&r).Error; err != nil {
			return err
		}
		if bump {
			_, err := reports.BumpGeneration(tx)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, s *stack, target, want string, tick func()) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := do(t, "GET", s.url+target)
		if r.status == 200 && strings.Contains(r.body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %s: %s", target, want, r.body)
		}
		if tick != nil {
			tick()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A writer's new generation is visible at once through the Redis
// announcement: the database poll is an hour here, so only the
// announcement can explain the change.
func TestGenerationAnnouncedOnRedis(t *testing.T) {
	gdb := pgDB(t)
	rc := newRedis(t, "")
	s := newStack(t, gdb, stackOptions{redis: rc, poll: time.Hour})
	target := statsPath + "?month=2025-06&server=2"
	if r := do(t, "GET", s.url+target); !strings.Contains(r.body, `"status":"missing"`) {
		t.Fatalf("before: %s", r.body)
	}
	addMonthly(t, gdb, "2025-06", true)
	gen, err := reports.Generation(context.Background(), gdb)
	if err != nil {
		t.Fatal(err)
	}
	// Announce like the collector does (repeated, as the subscription may
	// still be starting).
	waitFor(t, s, target, `"totalMessages":42`, func() {
		if err := reports.PublishGeneration(context.Background(), rc, gen); err != nil {
			t.Fatal(err)
		}
	})
}

// Without Redis the generation poll makes new data visible; data written
// without a new generation stays cached, which shows the cache is real.
func TestGenerationPolled(t *testing.T) {
	gdb := pgDB(t)
	s := newStack(t, gdb, stackOptions{poll: 50 * time.Millisecond})
	target := statsPath + "?month=2025-05&server=" + betaID
	if r := do(t, "GET", s.url+target); !strings.Contains(r.body, `"status":"missing"`) {
		t.Fatalf("before: %s", r.body)
	}
	addMonthly(t, gdb, "2025-05", false)
	time.Sleep(300 * time.Millisecond)
	if r := do(t, "GET", s.url+target); !strings.Contains(r.body, `"status":"missing"`) {
		t.Fatalf("a write without a new generation bypassed the cache: %s", r.body)
	}
	if err := gdb.Transaction(func(tx *gorm.DB) error { _, err := reports.BumpGeneration(tx); return err }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, target, `"totalMessages":42`, nil)
}
