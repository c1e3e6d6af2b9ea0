package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"forumstats.local/shared/form"
	sharedtest "forumstats.local/shared/testutil"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/query"
)

var redisURL string

func TestMain(m *testing.M) {
	u, err := sharedtest.RedisURL()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisURL = u
	sharedtest.Run(m)
}

// countingSource stands in for the store: it counts loads and answers with
// the query key and its current generation.
type countingSource struct {
	calls    atomic.Int64
	catalogs atomic.Int64
	gen      atomic.Int64
	valid    time.Duration // ValidUntil = now + valid; 0: none
	release  chan struct{} // when set, loads wait for it
	fail     error
	// failCatalog, when set, is the catalog read's error.
	failCatalog error
}

func (s *countingSource) Statistics(_ context.Context, q query.Query, now time.Time) (answers.Answer, error) {
	return s.load("s:"+q.Key(), now)
}

func (s *countingSource) Icons(_ context.Context, server string) (answers.Answer, error) {
	return s.load("i:"+server, time.Now())
}

func (s *countingSource) Series(_ context.Context, q query.Series, now time.Time) (answers.Answer, error) {
	return s.load("c:"+q.Key(), now)
}

func (s *countingSource) Activity(_ context.Context, q query.Activity, now time.Time) (answers.Answer, error) {
	return s.load("h:"+q.Key(), now)
}

func (s *countingSource) Generation(context.Context) (int64, error) { return s.gen.Load(), nil }

// Catalog is servers 1 to 3 with guild ids 1001 to 1003; catalogs counts its reads.
func (s *countingSource) Catalog(context.Context) (answers.Catalog, error) {
	s.catalogs.Add(1)
	if s.failCatalog != nil {
		return answers.Catalog{}, s.failCatalog
	}
	var entries []answers.CatalogEntry
	for n := 1; n <= 3; n++ {
		entries = append(entries, answers.CatalogEntry{Number: n, GuildID: strconv.Itoa(1000 + n)})
	}
	return answers.NewCatalog(s.gen.Load(), entries), nil
}

func (s *countingSource) load(key string, now time.Time) (answers.Answer, error) {
	s.calls.Add(1)
	if s.release != nil {
		<-s.release
	}
	if s.fail != nil {
		return answers.Answer{}, s.fail
	}
	a := answers.Answer{Body: []byte(fmt.Sprintf("%s@%d", key, s.gen.Load())), Generation: s.gen.Load()}
	if s.valid > 0 {
		a.ValidUntil = now.Add(s.valid)
	}
	return a, nil
}

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func mustQuery(t *testing.T, raw string) query.Query {
	t.Helper()
	q, err := query.Parse(form.Parse(raw), t0)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func prefix(t *testing.T) string {
	return fmt.Sprintf("test:cache:%d:%s:%d:", os.Getpid(), t.Name(), time.Now().UnixNano())
}

func body(t *testing.T, c *Cache, q query.Query, now time.Time) string {
	t.Helper()
	a, err := c.Statistics(context.Background(), q, now)
	if err != nil {
		t.Fatal(err)
	}
	return string(a.Body)
}

func TestL1ServesUntilValidity(t *testing.T) {
	src := &countingSource{valid: time.Minute}
	c := New(src, nil, Options{})
	q := mustQuery(t, "period=week")
	for _, at := range []time.Duration{0, time.Second, 59 * time.Second} {
		body(t, c, q, t0.Add(at))
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("loads %d, want 1", n)
	}
	body(t, c, q, t0.Add(time.Minute)) // valid until is exclusive
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("loads after validity %d, want 2", n)
	}
	// MaxTTL caps an answer without validity.
	src.valid = 0
	c = New(src, nil, Options{MaxTTL: time.Minute})
	body(t, c, q, t0)
	body(t, c, q, t0.Add(time.Minute-time.Nanosecond))
	body(t, c, q, t0.Add(time.Minute))
	if n := src.calls.Load(); n != 4 {
		t.Fatalf("loads with MaxTTL %d, want 4", n)
	}
}

func TestNewGenerationMisses(t *testing.T) {
	src := &countingSource{}
	c := New(src, nil, Options{})
	q := mustQuery(t, "month=2026-01")
	if got := body(t, c, q, t0); got != "s:month|2026-01|@0" {
		t.Fatalf("body %q", got)
	}
	src.gen.Store(1)
	if got := body(t, c, q, t0); got != "s:month|2026-01|@0" {
		t.Fatalf("before the generation is known: %q", got)
	}
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := body(t, c, q, t0); got != "s:month|2026-01|@1" {
		t.Fatalf("after refresh: %q", got)
	}
	// A load that sees a newer generation moves the cache forward by itself.
	src.gen.Store(5)
	body(t, c, mustQuery(t, "month=2026-02"), t0)
	if c.Generation() != 5 {
		t.Fatalf("generation %d, want 5", c.Generation())
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	src := &countingSource{fail: answers.ErrServerNotFound}
	c := New(src, nil, Options{})
	for i := 0; i < 2; i++ {
		if _, err := c.Icons(context.Background(), "2"); !errors.Is(err, answers.ErrServerNotFound) {
			t.Fatalf("error %v", err)
		}
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("loads %d, want 2", n)
	}
}

func TestConcurrentMissesLoadOnce(t *testing.T) {
	src := &countingSource{release: make(chan struct{})}
	c := New(src, nil, Options{})
	q := mustQuery(t, "period=day")
	var started, done sync.WaitGroup
	for i := 0; i < 20; i++ {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			if _, err := c.Statistics(context.Background(), q, t0); err != nil {
				t.Error(err)
			}
		}()
	}
	started.Wait()
	time.Sleep(100 * time.Millisecond)
	close(src.release)
	done.Wait()
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("loads %d, want 1", n)
	}
}

func TestL1Bound(t *testing.T) {
	l := newL1(1000)
	for i := 0; i < 100; i++ {
		l.put(fmt.Sprint(i), answers.Answer{Body: make([]byte, 90)}, t0.Add(time.Hour))
		if l.bytes > 1000 {
			t.Fatalf("l1 holds %d bytes", l.bytes)
		}
	}
	if len(l.items) == 0 || len(l.items) > 11 {
		t.Fatalf("l1 holds %d items", len(l.items))
	}
	l.put("huge", answers.Answer{Body: make([]byte, 400)}, t0.Add(time.Hour))
	if _, ok := l.get(0, "huge", t0); ok {
		t.Fatal("an answer over a quarter of the budget was kept")
	}
}

// A second instance (another replica, or this one restarted) finds the
// answer in Redis, and Redis expires it no later than its validity.
func TestRedisSharedBetweenInstances(t *testing.T) {
	rc := newRedis(t)
	p := prefix(t)
	t.Cleanup(func() {
		keys, _ := rc.Keys(context.Background(), p+"*").Result()
		if len(keys) > 0 {
			rc.Del(context.Background(), keys...)
		}
	})
	src := &countingSource{valid: 90 * time.Second}
	q := mustQuery(t, "period=range&from=2026-11-01&to=2026-11-03")
	now := time.Now()
	first := body(t, New(src, rc, Options{KeyPrefix: p}), q, now)
	before := testutil.ToFloat64(foundL2)
	second := body(t, New(src, rc, Options{KeyPrefix: p}), q, now.Add(time.Second))
	if first != second || src.calls.Load() != 1 || testutil.ToFloat64(foundL2) != before+1 {
		t.Fatalf("second instance: %q vs %q, loads %d", first, second, src.calls.Load())
	}
	// Every level hands out the body's tag, computed once per cached answer.
	for i, c := range []*Cache{New(src, rc, Options{KeyPrefix: p}), New(src, nil, Options{})} {
		for range 2 {
			a, err := c.Statistics(context.Background(), q, now)
			if err != nil || a.ETag == "" || a.ETag != answers.Tag(a.Body) {
				t.Fatalf("cache %d: ETag %q for %q (%v)", i, a.ETag, a.Body, err)
			}
		}
	}
	ttl, err := rc.PTTL(context.Background(), p+"0|s|"+q.Key()).Result()
	if err != nil || ttl <= 0 || ttl > 90*time.Second {
		t.Fatalf("Redis TTL %v, %v", ttl, err)
	}
	// Past its validity the Redis copy is not served either.
	third := New(src, rc, Options{KeyPrefix: p})
	body(t, third, q, now.Add(91*time.Second))
	if src.calls.Load() != 3 {
		t.Fatalf("an expired Redis answer was served: loads %d", src.calls.Load())
	}
}

// Redis unreachable: the source answers and the fallback is counted.
func TestRedisDownFallsBack(t *testing.T) {
	proxy, err := sharedtest.NewProxy("127.0.0.1:1") // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	proxy.SetDown(true)
	rc := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: 0, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rc.Close() })
	src := &countingSource{}
	c := New(src, rc, Options{KeyPrefix: prefix(t)})
	// Refused connections surface as errors or, while go-redis backs off
	// redialling, as the 50 ms timeout: either way a fallback.
	count := func(op string) float64 {
		return testutil.ToFloat64(fallbackTotal.WithLabelValues(op, "error")) + testutil.ToFloat64(fallbackTotal.WithLabelValues(op, "timeout"))
	}
	beforeGet, beforeSet := count("get"), count("set")
	start := time.Now()
	if got := body(t, c, mustQuery(t, "period=day"), t0); got != "s:day|2026-11-20|2026-11-20|@0" {
		t.Fatalf("body %q", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a dead Redis cost %v", d)
	}
	if count("get") != beforeGet+1 || count("set") != beforeSet+1 {
		t.Fatalf("fallbacks get %v set %v", count("get")-beforeGet, count("set")-beforeSet)
	}
}

// Series go through the cache too, under keys of their own.
func TestSeriesCached(t *testing.T) {
	src := &countingSource{}
	c := New(src, nil, Options{})
	sq, err := query.ParseSeries(form.Parse("from=2026-01-01&to=2026-01-31"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		a, err := c.Series(context.Background(), sq, t0)
		if err != nil {
			t.Fatal(err)
		}
		if string(a.Body) != "c:series|2026-01-01|2026-01-31|@0" {
			t.Fatalf("body %q", a.Body)
		}
	}
	body(t, c, mustQuery(t, "period=range&from=2026-01-01&to=2026-01-31"), t0)
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("loads %d, want 2 (one series, one statistics)", n)
	}
}

// Activity goes through the cache too, keyed by its zone: Moscow named or not is one entry, and
// another zone another.
func TestActivityCached(t *testing.T) {
	src := &countingSource{}
	c := New(src, nil, Options{})
	for _, raw := range []string{"from=2026-01-01&to=2026-01-31", "from=2026-01-01&to=2026-01-31&tz=Europe/Moscow",
		"tz=Europe/Moscow&to=2026-01-31&from=2026-01-01", "from=2026-01-01&to=2026-01-31&tz=America/New_York"} {
		q, err := query.ParseActivity(form.Parse(raw))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Activity(context.Background(), q, t0); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("loads %d, want 2 (Moscow, New York)", n)
	}
	sq, _ := query.ParseSeries(form.Parse("from=2026-01-01&to=2026-01-31&tz=America/New_York"))
	if a, err := c.Series(context.Background(), sq, t0); err != nil || string(a.Body) != "c:series|2026-01-01|2026-01-31||America/New_York@0" {
		t.Fatalf("series in a zone: %q %v", a.Body, err)
	}
}

// Every spelling of one server (its catalog number with or without leading zeros, its guild id)
// is one cache entry: one load per operation; a server the catalog lacks loads nothing; the
// catalog is read once per generation.
func TestServerSpellingsShareOneEntry(t *testing.T) {
	src := &countingSource{}
	c := New(src, nil, Options{})
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		load  func(server string) (answers.Answer, error)
		loads int64
	}{
		{"statistics", func(s string) (answers.Answer, error) {
			return c.Statistics(ctx, mustQuery(t, "period=week&server="+s), t0)
		}, 1},
		{"icons", func(s string) (answers.Answer, error) { return c.Icons(ctx, s) }, 1},
		{"series", func(s string) (answers.Answer, error) {
			q, err := query.ParseSeries(form.Parse("from=2026-11-01&to=2026-11-20&server=" + s))
			if err != nil {
				t.Fatal(err)
			}
			return c.Series(ctx, q, t0)
		}, 1},
		{"activity", func(s string) (answers.Answer, error) {
			q, err := query.ParseActivity(form.Parse("from=2026-11-01&to=2026-11-20&tz=UTC&server=" + s))
			if err != nil {
				t.Fatal(err)
			}
			return c.Activity(ctx, q, t0)
		}, 1},
	} {
		before := src.calls.Load()
		var first string
		for _, server := range []string{"2", "02", "0002", "1002"} {
			a, err := tt.load(server)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.name, server, err)
			}
			if first == "" {
				first = string(a.Body)
			} else if string(a.Body) != first {
				t.Errorf("%s %s: %q, want %q", tt.name, server, a.Body, first)
			}
		}
		if !strings.Contains(first, "1002") {
			t.Errorf("%s: %q does not name the guild id", tt.name, first)
		}
		if n := src.calls.Load() - before; n != tt.loads {
			t.Errorf("%s: %d loads, want %d", tt.name, n, tt.loads)
		}
		for _, unknown := range []string{"4", "0", "99999999999999999"} {
			if _, err := tt.load(unknown); !errors.Is(err, answers.ErrServerNotFound) {
				t.Errorf("%s %s: %v, want not found", tt.name, unknown, err)
			}
		}
		if n := src.calls.Load() - before; n != tt.loads {
			t.Errorf("%s: %d loads after unknown servers, want %d", tt.name, n, tt.loads)
		}
	}
	if n := src.catalogs.Load(); n != 1 {
		t.Errorf("catalog read %d times in one generation, want 1", n)
	}
	src.gen.Store(2)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Icons(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	if n := src.catalogs.Load(); n != 2 {
		t.Errorf("catalog read %d times over two generations, want 2", n)
	}
}

// With ColdLimit reads of the source running, another miss waits ColdWait and fails with ErrBusy,
// and a cached answer is served at once; a freed turn is taken again.
func TestColdLimit(t *testing.T) {
	src := &countingSource{}
	c := New(src, nil, Options{ColdLimit: 1, ColdWait: 30 * time.Millisecond})
	ctx := context.Background()
	warm := mustQuery(t, "period=week")
	body(t, c, warm, t0)

	src.release = make(chan struct{})
	held := make(chan error)
	go func() {
		_, err := c.Statistics(ctx, mustQuery(t, "period=day"), t0)
		held <- err
	}()
	for src.calls.Load() < 2 { // the held read has the turn
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	busy := make(chan error, 1)
	go func() {
		_, err := c.Statistics(ctx, mustQuery(t, "period=month&month=2026-10"), t0)
		busy <- err
	}()
	select {
	case err := <-busy:
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("second cold read: %v, want ErrBusy", err)
		}
	case <-time.After(5 * time.Second):
		close(src.release)
		t.Fatal("a second cold read was neither refused nor answered: it waits for the first")
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("refused after %v, want a wait of 30ms first", took)
	}
	start = time.Now()
	body(t, c, warm, t0) // cached: no turn needed
	if took := time.Since(start); took >= 30*time.Millisecond {
		t.Errorf("a cached answer took %v", took)
	}
	if n := src.calls.Load(); n != 2 {
		t.Errorf("%d loads, want 2 (the refused one never reached the source)", n)
	}
	close(src.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	body(t, c, mustQuery(t, "period=month&month=2026-10"), t0)
}
