package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forumstats.local/shared/testutil"
)

// leaseLimiter is a Redis limiter on the fake clock clk (nil: the real one) with patient
// timeouts: these tests count tokens, and a slow answer on a loaded machine must not send a call
// to the in-process bucket.
func leaseLimiter(t *testing.T, cfg Config, clk *testutil.Clock) *Redis {
	t.Helper()
	url, err := testutil.RedisURL()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRedis(patientRedisClient(t, url), testPrefix, cfg, nil)
	r.timeout = 5 * time.Second
	if clk != nil {
		r.now = clk.Now
	}
	return r
}

// redisTokens is what key's bucket in Redis holds (burst when it has no bucket yet).
func redisTokens(t *testing.T, key string, burst int) float64 {
	t.Helper()
	url, err := testutil.RedisURL()
	if err != nil {
		t.Fatal(err)
	}
	v, err := redisClient(t, url).HGet(context.Background(), testPrefix+key, "tokens").Result()
	if err != nil {
		return float64(burst)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLeaseCap(t *testing.T) {
	for _, tc := range []struct{ burst, want int }{
		{1, 1}, {3, 1}, {7, 1}, {8, 2}, {100, 25}, {128, 32}, {1_000_000, 32},
	} {
		if got := leaseCap(tc.burst); got != tc.want {
			t.Errorf("leaseCap(%d) = %d, want %d", tc.burst, got, tc.want)
		}
	}
}

// Leases grow while a key spends them fast, stay at one for a sparse key, and an expired lease's
// tokens are dropped: what Redis gave is what the replica may serve, never more. The refill is
// one token in 100 s, so Redis's bucket only changes by what the leases take.
func TestLeaseSizes(t *testing.T) {
	cfg := Config{PerMinute: 1, Burst: 100} // leases of 25 at most
	for _, tc := range []struct {
		name string
		// gaps between the requests (all allowed); the fake clock moves by each before its request
		gaps []time.Duration
		// taken is how many tokens Redis gave away in all, after the requests
		taken int
	}{
		{name: "one request", gaps: []time.Duration{0}, taken: 1},
		{name: "sparse requests take leases of one", gaps: repeat(10, leaseLife), taken: 10},
		{name: "requests further apart than half a life stay at one", gaps: repeat(6, leaseLife/2+time.Millisecond), taken: 6},
		// 1, 2, 4, 8, 16, 25, 25: 81 tokens taken serve 81 requests
		{name: "a hot key doubles up to the cap", gaps: repeat(81, 0), taken: 81},
		// 1 + 2 + 4: the 7th request opened a lease of 4 and used one of it; the 3 left are
		// dropped when it expires, and the next request takes a lease of one
		{name: "an expired lease is dropped", gaps: append(repeat(5, 0), 0, leaseLife, 0), taken: 1 + 2 + 4 + 1 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
			r := leaseLimiter(t, cfg, clk)
			key := fmt.Sprintf("sizes-%d", time.Now().UnixNano())
			for i, gap := range tc.gaps {
				clk.Add(gap)
				if d := r.Allow(context.Background(), key); !d.Allowed {
					t.Fatalf("request %d refused: %+v", i+1, d)
				}
			}
			if got := float64(cfg.Burst) - redisTokens(t, key, cfg.Burst); got < float64(tc.taken)-0.1 || got > float64(tc.taken) {
				t.Fatalf("Redis gave %.2f tokens, want %d", got, tc.taken)
			}
		})
	}
}

func repeat(n int, d time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

// A refusal carries Redis's wait, and the key's next requests are refused with the rest of it
// without asking Redis again: its bucket only grows by refilling.
func TestLeaseRefusalRetryAfter(t *testing.T) {
	clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
	cfg := Config{PerMinute: 6, Burst: 8} // a token in 10 s; leases of 2
	r := leaseLimiter(t, cfg, clk)
	key := fmt.Sprintf("refusal-%d", time.Now().UnixNano())
	ctx := context.Background()
	allowed := 0
	for range 20 {
		if r.Allow(ctx, key).Allowed {
			allowed++
		}
	}
	if allowed != 8 {
		t.Fatalf("%d of 20 allowed, want the burst of 8", allowed)
	}
	d := r.Allow(ctx, key)
	if d.Allowed || d.RetryAfter <= 9*time.Second || d.RetryAfter > 10*time.Second {
		t.Fatalf("refusal %+v: want Retry-After of about 10 s", d)
	}
	clk.Add(4 * time.Second)
	d2 := r.Allow(ctx, key)
	if d2.Allowed || d2.RetryAfter != d.RetryAfter-4*time.Second {
		t.Fatalf("4 s later %+v: want the rest of Redis's wait, %v", d2, d.RetryAfter-4*time.Second)
	}
	before := redisTokens(t, key, cfg.Burst)
	r.Allow(ctx, key)
	if after := redisTokens(t, key, cfg.Burst); after != before {
		t.Fatalf("a refusal within Redis's wait asked Redis (tokens %v, then %v)", before, after)
	}
}

// Four replicas on one Redis, each with concurrent clients hammering one key, admit no more than
// the bucket gives over the window: its burst plus its refill.
func TestLeasesKeepTheBudget(t *testing.T) {
	cfg := Config{PerMinute: 6000, Burst: 200} // 100 tokens a second, leases of 32
	limiters := make([]*Redis, 4)
	for i := range limiters {
		limiters[i] = leaseLimiter(t, cfg, nil)
	}
	key := fmt.Sprintf("budget-%d", time.Now().UnixNano())
	ctx := context.Background()
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(time.Second)
	for _, l := range limiters {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					if l.Allow(ctx, key).Allowed {
						allowed.Add(1)
					} else {
						refused.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	window := time.Since(start).Seconds()
	budget := float64(cfg.Burst) + cfg.ratePerSecond()*window
	if n := float64(allowed.Load()); n > budget {
		t.Fatalf("4 replicas admitted %.0f over %.2f s; the bucket's budget is %.0f", n, window, budget)
	}
	if allowed.Load() < int64(cfg.Burst) || refused.Load() == 0 {
		t.Fatalf("admitted %d, refused %d: want the burst at least, and refusals", allowed.Load(), refused.Load())
	}
}

// A client at or under its rate, one request at a time, is never refused, even when its rate
// makes its leases grow: it spends each within its life and no token is dropped.
func TestLeasesNeverRefuseAClientWithinItsRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		gap  time.Duration // between requests; the rate's interval or more
		n    int
	}{
		{name: "sparse", cfg: Config{PerMinute: 600, Burst: 4}, gap: 100 * time.Millisecond, n: 15},
		{name: "at the rate, leases grow", cfg: Config{PerMinute: 60_000, Burst: 40}, gap: time.Millisecond, n: 1500},
		{name: "at the rate, small burst", cfg: Config{PerMinute: 60_000, Burst: 8}, gap: time.Millisecond, n: 1500},
		{name: "burst of one", cfg: Config{PerMinute: 6000, Burst: 1}, gap: 10 * time.Millisecond, n: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := leaseLimiter(t, tc.cfg, nil)
			key := fmt.Sprintf("rate-%d", time.Now().UnixNano())
			next := time.Now()
			for i := range tc.n {
				// one request per interval from the end of the last one, never sooner than the
				// rate allows (Redis counts from when the script runs, within the call)
				time.Sleep(time.Until(next))
				if d := r.Allow(context.Background(), key); !d.Allowed {
					t.Fatalf("request %d of a client within its rate refused: %+v", i+1, d)
				}
				next = time.Now().Add(tc.gap)
			}
		})
	}
}
