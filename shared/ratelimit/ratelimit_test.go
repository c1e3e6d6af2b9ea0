package ratelimit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"forumstats.local/shared/rdb"
	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) { testutil.Run(m) }

// testPrefix is the tests' Redis key prefix, apart from any service's.
const testPrefix = "test:ratelimit:"

func TestLocalBucket(t *testing.T) {
	clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
	l := NewLocal(Config{PerMinute: 60, Burst: 3}, clk.Now) // one token a second
	ctx := context.Background()
	for i := range 3 {
		if d := l.Allow(ctx, "a"); !d.Allowed {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	d := l.Allow(ctx, "a")
	if d.Allowed || d.RetryAfterSeconds() != 1 {
		t.Fatalf("4th request: %+v; want refused, Retry-After 1", d)
	}
	if d := l.Allow(ctx, "b"); !d.Allowed {
		t.Fatal("another key shares the bucket")
	}
	clk.Add(500 * time.Millisecond)
	if d := l.Allow(ctx, "a"); d.Allowed {
		t.Fatal("half a token is not a token")
	}
	clk.Add(500 * time.Millisecond)
	if d := l.Allow(ctx, "a"); !d.Allowed {
		t.Fatal("refilled token refused")
	}
	clk.Add(time.Hour) // refills up to the burst, not beyond
	for i := range 3 {
		if d := l.Allow(ctx, "a"); !d.Allowed {
			t.Fatalf("after an hour, request %d refused", i+1)
		}
	}
	if d := l.Allow(ctx, "a"); d.Allowed {
		t.Fatal("the bucket grew beyond its burst")
	}
}

func TestRetryAfterRoundsUp(t *testing.T) {
	clk := testutil.NewClock(time.Unix(0, 0))
	l := NewLocal(Config{PerMinute: 1, Burst: 1}, clk.Now) // a token a minute
	ctx := context.Background()
	l.Allow(ctx, "k")
	clk.Add(1500 * time.Millisecond)
	if d := l.Allow(ctx, "k"); d.Allowed || d.RetryAfterSeconds() != 59 {
		t.Fatalf("%+v: want Retry-After 59 (58.5 rounded up)", d)
	}
	if (Decision{RetryAfter: time.Millisecond}).RetryAfterSeconds() != 1 {
		t.Fatal("Retry-After must be at least 1")
	}
}

func TestDefaults(t *testing.T) {
	if DefaultBurst(600) != 60 || DefaultBurst(5) != 1 {
		t.Fatal("default burst is a tenth of the minute's allowance, at least 1")
	}
	if (Config{PerMinute: 0, Burst: 1}).Validate() == nil || (Config{PerMinute: 1, Burst: 0}).Validate() == nil {
		t.Fatal("zero rates must be refused")
	}
}

// patientRedisClient is redisClient with 5 s timeouts, for tests that count exactly.
func patientRedisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	c := redisClient(t, url)
	opts := *c.Options()
	opts.ReadTimeout, opts.WriteTimeout, opts.DialTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	p := redis.NewClient(&opts)
	t.Cleanup(func() { p.Close() })
	return p
}

func redisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	c, err := rdb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Two replicas with their own clients share one bucket through Redis.
func TestRedisReplicasAgree(t *testing.T) {
	url, err := testutil.RedisURL()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{PerMinute: 6, Burst: 5} // refills one token in 10 s: nothing refills during the test
	// This test is about atomic counting, not the fail-open bounds (the limiter's 50 ms, the
	// client's 100 ms read timeout): on a loaded machine a slower answer must not send a call
	// to the in-process bucket.
	a := NewRedis(patientRedisClient(t, url), testPrefix, cfg, nil)
	b := NewRedis(patientRedisClient(t, url), testPrefix, cfg, nil)
	a.timeout, b.timeout = 5*time.Second, 5*time.Second
	key := fmt.Sprintf("test-%d", time.Now().UnixNano())
	ctx := context.Background()
	allowed := 0
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if l.Allow(ctx, key).Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("two replicas allowed %d of 10 requests; the shared burst is 5", allowed)
	}
	d := a.Allow(ctx, key)
	if d.Allowed || d.RetryAfterSeconds() < 1 || d.RetryAfterSeconds() > 10 {
		t.Fatalf("refusal %+v: want Retry-After in 1..10", d)
	}
	// The bucket lives under the prefix and expires.
	ttl, err := redisClient(t, url).PTTL(ctx, testPrefix+key).Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("bucket TTL = %v, %v", ttl, err)
	}
	// Concurrent requests are counted exactly (the script is atomic).
	key2 := key + "-concurrent"
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a.Allow(ctx, key2).Allowed {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 5 {
		t.Fatalf("40 concurrent requests: %d allowed; want 5", n)
	}
}

// A Redis that dies never fails a request: the in-process buckets take over, and Redis is used
// again once it answers.
func TestRedisFailsOpen(t *testing.T) {
	url, err := testutil.RedisURL()
	if err != nil {
		t.Fatal(err)
	}
	target := strings.TrimPrefix(url, "redis://")
	target = strings.SplitN(target, "/", 2)[0]
	proxy, err := testutil.NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	c := redisClient(t, "redis://"+proxy.Addr()+"/0")
	l := NewRedis(c, testPrefix, Config{PerMinute: 600, Burst: 100}, nil)
	ctx := context.Background()
	key := fmt.Sprintf("failopen-%d", time.Now().UnixNano())
	if !l.Allow(ctx, key).Allowed {
		t.Fatal("first request refused")
	}
	proxy.SetDown(true)
	start := time.Now()
	for i := range 5 {
		if !l.Allow(ctx, key).Allowed {
			t.Fatalf("request %d refused while Redis is down", i)
		}
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("5 requests took %v with Redis down; the fallback must be fast", el)
	}
	proxy.SetDown(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.Allow(ctx, key)
		n, err := redisClient(t, url).Exists(ctx, testPrefix+key).Result()
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Redis not used again after it came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A slow Redis costs one timeout, not one per request: the in-process buckets then serve alone
// for a moment before Redis is tried again.
func TestSlowRedisIsSkipped(t *testing.T) {
	url, err := testutil.RedisURL()
	if err != nil {
		t.Fatal(err)
	}
	target := strings.SplitN(strings.TrimPrefix(url, "redis://"), "/", 2)[0]
	proxy, err := testutil.NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	l := NewRedis(redisClient(t, "redis://"+proxy.Addr()+"/0"), testPrefix, Config{PerMinute: 600, Burst: 100}, nil)
	ctx := context.Background()
	key := fmt.Sprintf("slow-%d", time.Now().UnixNano())
	l.Allow(ctx, key) // connect while Redis is fast
	proxy.SetLatency(400 * time.Millisecond)
	start := time.Now()
	if !l.Allow(ctx, key).Allowed {
		t.Fatal("refused while Redis is slow")
	}
	if el := time.Since(start); el < redisTimeout || el > 300*time.Millisecond {
		t.Fatalf("the first call against a slow Redis took %v, want about %v", el, redisTimeout)
	}
	start = time.Now()
	for i := range 50 {
		if !l.Allow(ctx, key).Allowed {
			t.Fatalf("request %d refused", i)
		}
	}
	if el := time.Since(start); el > 100*time.Millisecond {
		t.Fatalf("50 requests after a Redis failure took %v: each still waited for Redis", el)
	}
}
