package httpapi_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/testutil"
)

// PostgreSQL becomes unreachable (a proxy in front of it cuts every connection and refuses new
// ones): every answer cached before, JSON or CSV, is still served past its validity with its
// body and tag, marked stale, and still answers If-None-Match; an answer never cached is 503
// database_unavailable, never 500; /readyz says 503. Once the database is back, answers are
// fresh again.
func TestStaleIfErrorPostgresUnreachable(t *testing.T) {
	s, proxy, clock := behindProxy(t, stackOptions{redis: newRedis(t, "")})

	cached := []string{
		statsPath + "?period=week",
		statsPath + "?period=day&date=2026-11-16&server=2",
		statsPath + "?period=week&format=csv",
		seriesPath + "?from=2026-11-14&to=2026-11-20&server=" + alphaID,
		seriesPath + "?from=2026-11-14&to=2026-11-20&format=csv",
	}
	before := map[string]response{}
	for _, target := range cached {
		r := do(t, "GET", s.url+target)
		if r.status != 200 || r.header.Get("Cache-Status") != "" {
			t.Fatalf("%s: %d Cache-Status %q", target, r.status, r.header.Get("Cache-Status"))
		}
		before[target] = r
	}

	icons := do(t, "GET", s.url+iconsPath)

	proxy.SetDown(true)
	// Past every answer's validity (at most the cache's ten minutes).
	clock.Add(11 * time.Minute)
	for _, target := range cached {
		wantStale(t, s, target, before[target])
	}
	// The icons do not depend on the clock: still fresh (in real time), served all the same.
	if r := do(t, "GET", s.url+iconsPath); r.status != 200 || r.body != icons.body {
		t.Fatalf("icons with the database down: %d %.200s", r.status, r.body)
	}
	for _, target := range []string{
		statsPath + "?period=day&date=2026-11-15",
		seriesPath + "?from=2026-11-01&to=2026-11-20&format=csv",
		statsPath + "?period=week&server=3", // the catalog was never read
	} {
		wantUnavailable(t, s, target)
	}
	if r := do(t, "GET", s.url+"/readyz"); r.status != 503 {
		t.Fatalf("/readyz with the database down: %d", r.status)
	}

	proxy.SetDown(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := do(t, "GET", s.url+cached[0])
		if r.status == 200 && r.header.Get("Cache-Status") == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d Cache-Status %q after the database came back", r.status, r.header.Get("Cache-Status"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PostgreSQL stops answering without refusing (the proxy holds every byte for an hour): each read
// fails after the read timeout, as unreachable, so a cached answer is served stale and an
// uncached one is 503 database_unavailable, within about the timeout, never a hang or a 500; the
// stale answer is marked and answers If-None-Match as when the database refuses.
func TestStaleIfErrorPostgresHangs(t *testing.T) {
	s, proxy, clock := behindProxy(t, stackOptions{readTimeout: 300 * time.Millisecond})
	target := statsPath + "?period=week&server=2"
	before := do(t, "GET", s.url+target)
	if before.status != 200 {
		t.Fatalf("%d %s", before.status, before.body)
	}

	proxy.SetLatency(time.Hour)
	t.Cleanup(func() { proxy.SetLatency(0) })
	clock.Add(11 * time.Minute)
	start := time.Now()
	wantStale(t, s, target, before)
	wantUnavailable(t, s, statsPath+"?period=day&date=2026-11-15")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("three answers with the database hung took %v", d)
	}
}

// behindProxy serves a stack over the seeded PostgreSQL database reached through a proxy that the
// test can cut or slow down, on a clock it can move (o.now is set to it).
func behindProxy(t *testing.T, o stackOptions) (*stack, *testutil.Proxy, *testutil.Clock) {
	t.Helper()
	pgDB(t) // seeded
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testutil.NewProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	u.Host = proxy.Addr()
	clock := testutil.NewClock(testNow)
	o.now = clock.Now
	return newStack(t, testutil.OpenDB(t, u.String()), o), proxy, clock
}

// wantStale fails t unless target, answered as before while the database was reachable, is
// answered again with the same body, tag and type, marked as a stale hit with no freshness left,
// and answers 304 to If-None-Match naming its tag.
func wantStale(t *testing.T, s *stack, target string, before response) {
	t.Helper()
	r := do(t, "GET", s.url+target)
	if r.status != 200 || r.body != before.body || r.header.Get("ETag") != before.header.Get("ETag") ||
		r.header.Get("Content-Type") != before.header.Get("Content-Type") {
		t.Fatalf("%s with the database out of reach: %d %.200s", target, r.status, r.body)
	}
	if cs := r.header.Get("Cache-Status"); !strings.HasPrefix(cs, "stats-svc; hit; ttl=-") || !strings.HasSuffix(cs, "; detail=stale-if-error") {
		t.Fatalf("%s: Cache-Status %q", target, cs)
	}
	if cc := r.header.Get("Cache-Control"); cc != "public, max-age=0, stale-if-error=86400" {
		t.Fatalf("%s: Cache-Control %q", target, cc)
	}
	if c := doWith(t, "GET", s.url+target, map[string]string{"If-None-Match": before.header.Get("ETag")}); c.status != 304 {
		t.Fatalf("%s: If-None-Match with the database out of reach: %d", target, c.status)
	}
}

// wantUnavailable fails t unless target, never cached, is answered 503 database_unavailable in
// JSON with Retry-After: 5.
func wantUnavailable(t *testing.T, s *stack, target string) {
	t.Helper()
	r := do(t, "GET", s.url+target)
	if r.status != 503 || r.body != `{"error":"database_unavailable"}` || r.header.Get("Retry-After") != "5" ||
		r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s never cached, database out of reach: %d %q Retry-After %q", target, r.status, r.body, r.header.Get("Retry-After"))
	}
}
