//go:build faults

package systest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/tools/stack"
)

// The attacks of one client flooding stats-svc: many distinct cold queries, spellings of one
// server that must share a cache entry, and a burst of concurrent cold queries above the bound.

// statsLimited is the environment that puts stats-svc's own defaults back in place of statsEnv's
// lifted rate limit.
var statsLimited = []string{"RATE_LIMIT_PER_MINUTE=600", "RATE_LIMIT_BURST=100"}

// coldLookups reads stats_cache_lookups_total{found="source"} from the service's /metrics: the
// answers that were read from the database.
func coldLookups(t *testing.T, svc *stack.Service) int64 {
	t.Helper()
	res, err := http.Get(svc.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `stats_cache_lookups_total{found="source"} `); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %q: %v", sc.Text(), err)
			}
			return int64(n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0
}

// attackAnswer is what the attack tests keep of one answer.
type attackAnswer struct {
	status     int
	retryAfter string
	body       string
	took       time.Duration
	err        error
}

func attackGet(client *http.Client, u string) attackAnswer {
	start := time.Now()
	res, err := client.Get(u)
	if err != nil {
		return attackAnswer{err: err, took: time.Since(start)}
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	return attackAnswer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), body: string(b), took: time.Since(start), err: err}
}

// rangeQuery is the i-th of many distinct all-servers ranges (1 to 31 days).
func rangeQuery(base reports.Day, i int) string {
	from := base.AddDays(i / reportsMaxRange)
	to := from.AddDays(i % reportsMaxRange)
	return "/api/chat-statistics?period=range&from=" + from.String() + "&to=" + to.String()
}

const reportsMaxRange = 31

// TestAttackStatsFlood: one client sends 1,500 distinct range queries at 150 a second. With the
// default limit (600 a minute, burst 100) it gets 429 with Retry-After past its budget, and the
// database answers at most the budget.
func TestAttackStatsFlood(t *testing.T) {
	pg := postgres(t)
	rd := redis(t)
	fx := statsFixture()
	svc := service(t, stack.Stats, statsEnv(t, pg, fx, append([]string{"REDIS_URL=" + rd.URL()}, statsLimited...)...)...)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const total, perSecond = 1500, 150
	base := reports.DayOf(fx.Now).AddDays(-400)

	cold0 := coldLookups(t, svc)
	answers := make([]attackAnswer, total)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / perSecond)
	start := time.Now()
	for i := range total {
		if i > 0 {
			<-tick.C
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = attackGet(client, svc.URL+rangeQuery(base, i))
		}()
	}
	tick.Stop()
	sent := time.Since(start)
	wg.Wait()
	elapsed := time.Since(start)
	cold := coldLookups(t, svc) - cold0

	statuses := map[int]int{}
	var transport int
	var slowest time.Duration
	for i, a := range answers {
		if a.err != nil {
			transport++
			continue
		}
		statuses[a.status]++
		slowest = max(slowest, a.took)
		switch a.status {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			if a.body != `{"error":"too_many_requests"}` || a.retryAfter == "" {
				t.Errorf("request %d: 429 with body %q and Retry-After %q", i, a.body, a.retryAfter)
			}
		case http.StatusServiceUnavailable: // the bound on cold reads, while the burst is let through
			if a.body != `{"error":"service_busy"}` || a.retryAfter == "" {
				t.Errorf("request %d: 503 with body %q and Retry-After %q", i, a.body, a.retryAfter)
			}
		default:
			t.Errorf("request %d: %d %q", i, a.status, a.body)
		}
	}
	// The budget over the attack: the burst plus the refill of 600 a minute while it ran. A
	// bucket call that Redis does not answer within 50 ms falls back to the in-process bucket of
	// the same shape (fail open), which grants its own budget: twice the budget at most then.
	budget := 100 + int(elapsed.Seconds()*10) + 1
	fallbacks := strings.Count(svc.Output(), "rate limit: Redis unavailable")
	if fallbacks > 0 {
		budget *= 2
	}
	report(t, "%d distinct range queries in %.1f s (sent over %.1f s) from one client: %d answered 200, %d 429, %d 503, %d other, %d transport errors; %d cold database reads (budget %d; Redis fell back to in-process buckets: %v); slowest %v",
		total, elapsed.Seconds(), sent.Seconds(), statuses[200], statuses[429], statuses[503], total-statuses[200]-statuses[429]-statuses[503]-transport, transport,
		cold, budget, fallbacks > 0, slowest.Round(time.Millisecond))
	if transport > 0 {
		t.Errorf("%d transport errors", transport)
	}
	if statuses[200] > budget {
		t.Errorf("%d answered 200, budget %d", statuses[200], budget)
	}
	if cold > int64(budget) {
		t.Errorf("%d cold database reads, budget %d", cold, budget)
	}
	if statuses[429] == 0 {
		t.Errorf("no 429 in %d requests at %d/s", total, perSecond)
	}
	// A probe is never limited, even now.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if a := attackGet(client, svc.URL+p); a.status != http.StatusOK {
			t.Errorf("%s after the flood: %d %q", p, a.status, a.body)
		}
	}
}

// TestAttackStatsServerVariants: one server named by its catalog number with and without leading
// zeros and by its guild id, the parameters in another order, is one cache entry: one cold read.
func TestAttackStatsServerVariants(t *testing.T) {
	pg := postgres(t)
	fx := statsFixture()
	svc := service(t, stack.Stats, statsEnv(t, pg, fx)...)
	client := &http.Client{Timeout: 30 * time.Second}
	month := reports.MonthOf(fx.Now).String()
	guild := fx.GuildID(2)
	variants := []string{
		"period=month&month=" + month + "&server=2",
		"period=month&month=" + month + "&server=02",
		"period=month&month=" + month + "&server=0002",
		"period=month&month=" + month + "&server=" + guild,
		"server=2&month=" + month + "&period=month",
		"month=" + month + "&server=" + guild,
	}
	cold0 := coldLookups(t, svc)
	var first string
	for _, v := range variants {
		a := attackGet(client, svc.URL+"/api/chat-statistics?"+v)
		if a.err != nil || a.status != http.StatusOK {
			t.Fatalf("%s: %d %v %q", v, a.status, a.err, a.body)
		}
		if first == "" {
			first = a.body
		} else if a.body != first {
			t.Errorf("%s: another answer than %s", v, variants[0])
		}
	}
	cold := coldLookups(t, svc) - cold0
	report(t, "%d spellings of server 2's month (number, leading zeros, guild id, parameter order): %d cold database reads", len(variants), cold)
	if cold != 1 {
		t.Errorf("%d cold reads, want 1", cold)
	}

	// The same for the icons and the series.
	today := reports.DayOf(fx.Now)
	for _, group := range [][]string{
		{"/api/chat-icons?server=3", "/api/chat-icons?server=03", "/api/chat-icons?server=" + fx.GuildID(3)},
		{
			"/api/chat-series?from=" + today.AddDays(-9).String() + "&to=" + today.String() + "&server=4",
			"/api/chat-series?server=004&to=" + today.String() + "&from=" + today.AddDays(-9).String(),
			"/api/chat-series?from=" + today.AddDays(-9).String() + "&to=" + today.String() + "&server=" + fx.GuildID(4),
		},
	} {
		before := coldLookups(t, svc)
		for _, u := range group {
			if a := attackGet(client, svc.URL+u); a.err != nil || a.status != http.StatusOK {
				t.Fatalf("%s: %d %v %q", u, a.status, a.err, a.body)
			}
		}
		cold := coldLookups(t, svc) - before
		report(t, "%d spellings of %s: %d cold database reads", len(group), group[0], cold)
		if cold != 1 {
			t.Errorf("%s: %d cold reads, want 1", group[0], cold)
		}
	}
}

// TestAttackStatsColdBurst: 64 distinct cold queries at once against a bound of 2 concurrent
// cold queries that wait at most 20 ms for their turn: the excess is answered 503 with
// Retry-After in the envelope at once, and PostgreSQL never runs more than the bound's
// statements (two connections each: an all-servers range of 8 days or more is summed in halves).
func TestAttackStatsColdBurst(t *testing.T) {
	pg := postgres(t)
	fx := statsFixture()
	env := statsEnv(t, pg, fx, "COLD_QUERY_LIMIT=2", "COLD_QUERY_WAIT=20ms")
	dbURL := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "DATABASE_URL="); ok {
			dbURL = v
		}
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	svc := service(t, stack.Stats, env...)

	// Sample the statements PostgreSQL runs for this database while the burst lasts.
	conn, err := pg.Connect(context.Background(), "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int64
			if err := conn.QueryRow(context.Background(),
				`SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND state = 'active'`, dbName).Scan(&n); err == nil && n > peak.Load() {
				peak.Store(n)
			}
		}
	}()

	const burst = 64
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: burst, MaxConnsPerHost: burst}}
	// Open the connections first, so that the burst is the queries, not the TCP handshakes.
	var warm sync.WaitGroup
	for range burst {
		warm.Add(1)
		go func() { defer warm.Done(); attackGet(client, svc.URL+"/healthz") }()
	}
	warm.Wait()
	base := reports.DayOf(fx.Now).AddDays(-39)
	cold0 := coldLookups(t, svc)
	answers := make([]attackAnswer, burst)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			// Ranges of 8 to 31 days over the fixture's data, all different.
			q := "/api/chat-statistics?period=range&from=" + base.AddDays(i%8).String() + "&to=" + base.AddDays(i%8+7+i/8).String()
			answers[i] = attackGet(client, svc.URL+q)
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	cold := coldLookups(t, svc) - cold0

	var ok, busy int
	var slowestBusy, slowest time.Duration
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("request %d: %v", i, a.err)
		case a.status == http.StatusOK:
			ok++
		case a.status == http.StatusServiceUnavailable:
			busy++
			slowestBusy = max(slowestBusy, a.took)
			var env map[string]any
			if json.Unmarshal([]byte(a.body), &env) != nil || a.body != `{"error":"service_busy"}` || a.retryAfter == "" {
				t.Errorf("request %d: 503 %q with Retry-After %q", i, a.body, a.retryAfter)
			}
		default:
			t.Errorf("request %d: %d %q", i, a.status, a.body)
		}
		slowest = max(slowest, a.took)
	}
	report(t, "%d distinct cold range queries at once, bound 2 waiting 20 ms: %d answered 200, %d 503 (slowest 503 %v); %d cold database reads; peak %d active statements on the database; all answered in %v (slowest %v)",
		burst, ok, busy, slowestBusy.Round(time.Millisecond), cold, peak.Load(), elapsed.Round(time.Millisecond), slowest.Round(time.Millisecond))
	if busy == 0 {
		t.Errorf("no 503 for %d cold queries at once above a bound of 2", burst)
	}
	// Two statements per cold query (the halves of a split range), and one for the generation poll.
	if p := peak.Load(); p > 2*2+1 {
		t.Errorf("peak %d active statements, bound 2 cold queries", p)
	}
	if slowestBusy > time.Second {
		t.Errorf("a 503 took %v: the excess piled up instead of being refused", slowestBusy)
	}
}
