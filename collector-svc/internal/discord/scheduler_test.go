package discord

import (
	"context"
	"fmt"
	"io"
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
// second per hash and guild, starting at a request, as Discord's); it records departures and
// counts 429s.
type bucketTransport struct {
	latency time.Duration
	limit   int
	hashOf  func(path string) string

	mu         sync.Mutex
	start      time.Time
	departures []time.Time
	windows    map[string]*struct {
		start time.Time
		n     int
	}
	limited int
}

func (b *bucketTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.departures = append(b.departures, time.Now())
	b.mu.Unlock()
	time.Sleep(b.latency)
	guild := strings.Split(strings.TrimPrefix(req.URL.Path, "/guilds/"), "/")[0]
	hash := b.hashOf(req.URL.Path)
	now := time.Now()
	b.mu.Lock()
	key := hash + "|" + guild
	w := b.windows[key]
	if w == nil || !now.Before(w.start.Add(time.Second)) {
		w = &struct {
			start time.Time
			n     int
		}{start: now}
		b.windows[key] = w
	}
	w.n++
	n, reset := w.n, w.start.Add(time.Second).Sub(now)
	if n > b.limit {
		b.limited++
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
	return &bucketTransport{latency: latency, limit: limit, hashOf: hashOf, start: time.Now(), windows: map[string]*struct {
		start time.Time
		n     int
	}{}}
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
