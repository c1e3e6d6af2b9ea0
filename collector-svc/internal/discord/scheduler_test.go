package discord

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"forumstats.local/shared/testutil"
)

// bucketTransport plays Discord for the scheduler's tests under a virtual clock: every answer
// takes latency; routes are mapped to bucket hashes by hashOf (one window of limit requests per
// second per hash and guild, starting at a request, as Discord's); it records departures, counts
// 429s, and notes every departure into a bucket that an earlier answer announced empty
// (X-RateLimit-Remaining 0) for a time not yet over. With foreign set, another client of the same
// token spends that many permits of each window at its first arrival 300 ms or more into it.
type bucketTransport struct {
	latency time.Duration
	limit   int
	hashOf  func(path string) string
	foreign int

	mu         sync.Mutex
	start      time.Time
	departures []time.Time
	windows    map[string]*bucketWindow
	limited    int
	emptyAt    map[string]time.Time // bucket and guild → when the last answer announcing it empty came
	emptyTill  map[string]time.Time // … and the end of that window, by the client's clock
	intoEmpty  []string             // departures into a bucket known to be empty, described
}

// bucketWindow is one window of a bucket for one guild: when it opened, the permits spent, and
// whether the other client has spent its share yet.
type bucketWindow struct {
	start   time.Time
	n       int
	foreign bool
}

func (b *bucketTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	guild := strings.Split(strings.TrimPrefix(req.URL.Path, "/guilds/"), "/")[0]
	hash := b.hashOf(req.URL.Path)
	key := hash + "|" + guild
	b.mu.Lock()
	now := time.Now()
	b.departures = append(b.departures, now)
	// Strictly after the answer: at the very instant it comes, the client may not have read it yet.
	if at, till := b.emptyAt[key], b.emptyTill[key]; now.After(at) && now.Before(till) {
		b.intoEmpty = append(b.intoEmpty, fmt.Sprintf("%s left at %s, %s after an answer announced it empty for %s",
			key, now.Sub(b.start), now.Sub(at), till.Sub(at)))
	}
	b.mu.Unlock()
	time.Sleep(b.latency)
	now = time.Now()
	b.mu.Lock()
	w := b.windows[key]
	if w == nil || !now.Before(w.start.Add(time.Second)) {
		w = &bucketWindow{start: now}
		b.windows[key] = w
	}
	w.n++
	if b.foreign > 0 && !w.foreign && now.Sub(w.start) >= 300*time.Millisecond {
		w.n, w.foreign = w.n+b.foreign, true
	}
	// Reset-After is announced in milliseconds, rounded up as the window may not end earlier.
	n, reset := w.n, w.start.Add(time.Second).Sub(now).Round(time.Millisecond)
	if reset < w.start.Add(time.Second).Sub(now) {
		reset += time.Millisecond
	}
	if n > b.limit {
		b.limited++
	}
	if n >= b.limit {
		b.emptyAt[key], b.emptyTill[key] = now, now.Add(reset)
	}
	b.mu.Unlock()
	h := http.Header{}
	h.Set("X-RateLimit-Bucket", hash)
	h.Set("X-RateLimit-Limit", fmt.Sprint(b.limit))
	h.Set("X-RateLimit-Remaining", fmt.Sprint(max(0, b.limit-n)))
	h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", reset.Seconds()))
	status, body := 200, `{"total_results":1}`
	switch {
	case n > b.limit:
		status, body = 429, fmt.Sprintf(`{"message":"limited","retry_after":%.3f,"global":false}`, reset.Seconds())
	case strings.HasSuffix(req.URL.Path, "/channels"):
		body = `[]`
	case !strings.Contains(req.URL.Path, "/messages"):
		body = `{"id":"` + guild + `","name":"g"}`
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

func newBucketTransport(latency time.Duration, limit int, hashOf func(string) string) *bucketTransport {
	return &bucketTransport{latency: latency, limit: limit, hashOf: hashOf, start: time.Now(), windows: map[string]*bucketWindow{}, emptyAt: map[string]time.Time{}, emptyTill: map[string]time.Time{}}
}

// busiest is the most departures within any one second.
func (b *bucketTransport) busiest() int { return testutil.Busiest(b.departures, time.Second) }

// TestSchedulerSharedBucket: /guilds/{id} and /guilds/{id}/channels share one bucket of 2 a
// second per guild: once the hash is learned, the two routes together stay within it (no 429),
// and another guild's requests are not held by it.
func TestSchedulerSharedBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newBucketTransport(100*time.Millisecond, 2, func(string) string { return "meta" })
		c := New(Config{BaseURL: "http://discord.test", HTTPClient: &http.Client{Transport: tr}})
		ctx := context.Background()
		// Learn the hash of both routes first.
		if _, err := c.Guild(ctx, guildA); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Channels(ctx, guildA); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		start := time.Now()
		var wg sync.WaitGroup
		var doneB time.Duration
		for i := range 8 {
			wg.Go(func() {
				var err error
				if i%2 == 0 {
					_, err = c.Guild(ctx, guildA)
				} else {
					_, err = c.Channels(ctx, guildA)
				}
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Go(func() {
			if _, err := c.Guild(ctx, guildB); err != nil {
				t.Error(err)
			}
			doneB = time.Since(start)
		})
		wg.Wait()
		if tr.limited != 0 {
			t.Errorf("%d answers were 429", tr.limited)
		}
		// 8 requests at 2 a second (a window opens at an arrival): at least 3 more windows.
		if d := time.Since(start); d < 3*time.Second {
			t.Errorf("8 requests through a bucket of 2/s in %s", d)
		}
		if doneB > 500*time.Millisecond {
			t.Errorf("guild B waited %s behind guild A's bucket", doneB)
		}
	})
}

// TestSchedulerInterleavesGuilds: 10 guilds with search buckets of 10 a second, answers taking
// 1 s, 40 searches each, a cap of 50: the cap binds (400 requests in about 8 s, not the 40 s of one
// request in flight per guild, nor the 16 s of one guild at a time), never more than 50 leave in a
// second, and no 429.
func TestSchedulerInterleavesGuilds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newBucketTransport(time.Second, 10, func(string) string { return "search" })
		c := New(Config{BaseURL: "http://discord.test", HTTPClient: &http.Client{Transport: tr}, GlobalRate: 50})
		from, to := window()
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 10 {
			for range 40 {
				wg.Go(func() {
					if _, err := c.CountMessages(context.Background(), fmt.Sprint(1000+g), "", from, to); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
		took := time.Since(start)
		if tr.limited != 0 {
			t.Errorf("%d answers were 429", tr.limited)
		}
		if b := tr.busiest(); b > 50 {
			t.Errorf("%d requests left within one second, want ≤ 50", b)
		}
		// 400 ÷ 50 = 8 s of departures, then the last answers' second; the buckets (10 per guild
		// and window, a window lasting from an arrival) allow that with 10 guilds.
		if took > 12*time.Second {
			t.Errorf("400 requests took %s, want about 9 s (the cap binds)", took)
		}
		t.Logf("400 requests in %s, busiest second %d", took, tr.busiest())
	})
}

// TestSchedulerRechecksBucketAtDeparture: on a busy machine a granted request's goroutine may run
// long after its grant, and meanwhile answers may announce its bucket empty, or name the route's
// bucket so that the requests granted since spend the real bucket's permits. The limiter's granted
// hook holds chosen requests between their grant and their departure; whatever the hold, no
// request leaves into a bucket that an answer has announced empty for a time not yet over, none
// gets a 429, and every call succeeds.
func TestSchedulerRechecksBucketAtDeparture(t *testing.T) {
	// firstOf holds the first grant of each guild but the first (its route's bucket is learned
	// from another guild's answer meanwhile) for d.
	firstOf := func(d time.Duration) func() func(string) time.Duration {
		return func() func(string) time.Duration {
			seen := map[string]bool{}
			return func(guild string) time.Duration {
				first := !seen[guild]
				seen[guild] = true
				if first && guild != "1000" {
					return d
				}
				return 0
			}
		}
	}
	// everyThird holds every third grant for d.
	everyThird := func(d time.Duration) func() func(string) time.Duration {
		return func() func(string) time.Duration {
			n := 0
			return func(string) time.Duration {
				if n++; n%3 == 0 {
					return d
				}
				return 0
			}
		}
	}
	// someRandom holds one grant in four for up to 1.5 s, from a seeded source.
	someRandom := func(seed uint64) func() func(string) time.Duration {
		return func() func(string) time.Duration {
			r := rand.New(rand.NewPCG(seed, 7))
			return func(string) time.Duration {
				if r.IntN(4) == 0 {
					return time.Duration(r.Int64N(int64(1500 * time.Millisecond)))
				}
				return 0
			}
		}
	}
	for _, tc := range []struct {
		name    string
		latency time.Duration
		guilds  int
		hold    func() func(guild string) time.Duration
		foreign int // permits of each window another client spends (see bucketTransport)
	}{
		{"first request of a guild held 700ms, 100ms latency", 100 * time.Millisecond, 2, firstOf(700 * time.Millisecond), 0},
		{"first request of a guild held 1.2s, 300ms latency", 300 * time.Millisecond, 4, firstOf(1200 * time.Millisecond), 0},
		{"every third held 700ms, 1s latency", time.Second, 5, everyThird(700 * time.Millisecond), 0},
		{"random holds, 250ms latency", 250 * time.Millisecond, 8, someRandom(1), 0},
		{"every third held 400ms, another client spending 4 a window", 100 * time.Millisecond, 1, everyThird(400 * time.Millisecond), 4},
		{"random holds, another client spending 3 a window", 50 * time.Millisecond, 3, someRandom(2), 3},
		{"random holds, another client spending 4 a window", 0, 2, someRandom(3), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := newBucketTransport(tc.latency, 10, func(string) string { return "search" })
				tr.foreign = tc.foreign
				c := New(Config{BaseURL: "http://discord.test", HTTPClient: &http.Client{Transport: tr}, GlobalRate: 50})
				var mu sync.Mutex
				hold, held := tc.hold(), 0
				c.lim.granted = func(_, guild string) {
					mu.Lock()
					d := hold(guild)
					if d > 0 {
						held++
					}
					mu.Unlock()
					time.Sleep(d)
				}
				from, to := window()
				var wg sync.WaitGroup
				for g := range tc.guilds {
					for range 40 {
						wg.Go(func() {
							if _, err := c.CountMessages(context.Background(), fmt.Sprint(1000+g), "", from, to); err != nil {
								t.Error(err)
							}
						})
					}
				}
				wg.Wait()
				for _, s := range tr.intoEmpty {
					t.Error(s)
				}
				// The other client's spending is news only when an answer tells it: requests already
				// on their way then meet a spent window, and that 429 cannot be helped.
				if tr.limited != 0 && tc.foreign == 0 {
					t.Errorf("%d answers were 429", tr.limited)
				}
				t.Logf("%d requests, %d held, %d into a bucket known to be empty, %d × 429, %s",
					len(tr.departures), held, len(tr.intoEmpty), tr.limited, time.Since(tr.start))
			})
		})
	}
}
