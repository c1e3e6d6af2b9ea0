package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

const (
	guildA = "175928847299117063"
	guildB = "81384788765712384"
	chanA  = "81384788765712390"
)

// fakeAPI is an httptest server whose answers the test scripts; it records
// every request it receives.
type fakeAPI struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []*http.Request
	times []time.Time
	n     atomic.Int64
}

func newFakeAPI(t *testing.T, h func(n int64, w http.ResponseWriter, r *http.Request)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.n.Add(1)
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Clone(context.Background()))
		f.times = append(f.times, time.Now())
		f.mu.Unlock()
		h(n, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.reqs...)
}

// at returns when the i-th request (from 0) arrived.
func (f *fakeAPI) at(i int) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.times[i]
}

func (f *fakeAPI) client(mod ...func(*Config)) *Client {
	cfg := Config{BaseURL: f.URL + "/api/v10/", Token: "tok", GlobalRate: 1000, BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	for _, m := range mod {
		m(&cfg)
	}
	return New(cfg)
}

func write(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func searchOK(w http.ResponseWriter, total int) {
	write(w, 200, fmt.Sprintf(`{"total_results": %d, "messages": [], "analytics_id": "x"}`, total))
}

func window() (time.Time, time.Time) {
	from := time.Date(2026, 11, 19, 21, 0, 0, 0, time.UTC)
	return from, from.Add(24 * time.Hour)
}

func TestRequestShape(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v10/guilds/" + guildA:
			write(w, 200, `{"id":"`+guildA+`","name":"Alpha","icon":"a_1f2e","banner":null,"features":[]}`)
		case "/api/v10/guilds/" + guildA + "/channels":
			write(w, 200, `[{"id":"1","type":4,"name":"Cat","parent_id":null,"position":0},
				{"id":"2","type":0,"name":"general","parent_id":"1","position":1,"permission_overwrites":[ {"id":"9", "type":0, "allow":"0", "deny":"1024"} ]},
				{"id":"3","type":15,"name":"forum","position":2}]`)
		case "/api/v10/guilds/" + guildA + "/messages/search":
			searchOK(w, 42)
		default:
			write(w, 404, `{"message":"404: Not Found","code":0}`)
		}
	})
	c := f.client(func(c *Config) { c.UserAgent = "DiscordBot (https://example.test, 2.0)" })
	ctx := context.Background()

	g, err := c.Guild(ctx, guildA)
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != guildA || g.Name != "Alpha" || g.Icon == nil || *g.Icon != "a_1f2e" || g.Banner != nil {
		t.Fatalf("Guild = %+v", g)
	}
	chs, err := c.Channels(ctx, guildA)
	if err != nil {
		t.Fatal(err)
	}
	want := []Channel{{"1", "Cat", 4, "", ""}, {"2", "general", 0, "1", `[{"id":"9","type":0,"allow":"0","deny":"1024"}]`}, {"3", "forum", 15, "", ""}}
	if fmt.Sprint(chs) != fmt.Sprint(want) {
		t.Fatalf("Channels = %+v, want %+v", chs, want)
	}
	from, to := window()
	n, err := c.CountMessages(ctx, guildA, chanA, from, to)
	if err != nil || n != 42 {
		t.Fatalf("CountMessages = %d, %v", n, err)
	}
	n, err = c.CountMessages(ctx, guildA, "", from, to)
	if err != nil || n != 42 {
		t.Fatalf("CountMessages(guild) = %d, %v", n, err)
	}

	reqs := f.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, r := range reqs {
		if r.Method != http.MethodGet || r.Header.Get("Authorization") != "Bot tok" ||
			r.Header.Get("User-Agent") != "DiscordBot (https://example.test, 2.0)" {
			t.Errorf("request %s %s: Authorization %q, User-Agent %q", r.Method, r.URL, r.Header.Get("Authorization"), r.Header.Get("User-Agent"))
		}
	}
	q := reqs[2].URL.Query()
	wantMin, wantMax, _ := WindowIDs(from, to)
	if q.Get("min_id") != fmt.Sprint(wantMin) || q.Get("max_id") != fmt.Sprint(wantMax) ||
		q.Get("channel_id") != chanA || q.Get("limit") != "1" || q.Get("include_nsfw") != "true" {
		t.Errorf("search query = %v", q)
	}
	if reqs[3].URL.Query().Has("channel_id") {
		t.Errorf("guild-wide search sent channel_id: %v", reqs[3].URL.Query())
	}
}

func TestNoTokenNoAuthorization(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Authorization"]; ok {
			write(w, 400, `{"message":"unexpected Authorization","code":0}`)
			return
		}
		searchOK(w, 1)
	})
	c := f.client(func(c *Config) { c.Token = "" })
	from, to := window()
	if _, err := c.CountMessages(context.Background(), guildA, "", from, to); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidInput(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) { searchOK(w, 1) })
	c := f.client()
	ctx := context.Background()
	from, to := window()
	if _, err := c.Guild(ctx, "12/../34"); err == nil {
		t.Error("Guild accepted a malformed id")
	}
	if _, err := c.CountMessages(ctx, guildA, "abc", from, to); err == nil {
		t.Error("CountMessages accepted a malformed channel id")
	}
	if _, err := c.CountMessages(ctx, guildA, "", to, from); err == nil {
		t.Error("CountMessages accepted a reversed window")
	}
	if n, err := c.CountMessages(ctx, guildA, "", from, from); n != 0 || err != nil {
		t.Errorf("empty window = %d, %v", n, err)
	}
	if got := f.n.Load(); got != 0 {
		t.Errorf("%d requests sent for invalid or empty input", got)
	}
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		status   int
		body     string
		sentinel error
		code     int
	}{
		{401, `{"message":"401: Unauthorized","code":0}`, ErrUnauthorized, 0},
		{403, `{"message":"Missing Access","code":50001}`, ErrForbidden, 50001},
		{404, `{"message":"Unknown Guild","code":10004}`, ErrNotFound, 10004},
		{400, `{"message":"Invalid Form Body","code":50035}`, nil, 50035},
		{405, `not json`, nil, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) { write(w, tt.status, tt.body) })
			from, to := window()
			_, err := f.client().CountMessages(context.Background(), guildA, chanA, from, to)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != tt.status || ae.Code != tt.code || ae.Route != routeSearch {
				t.Fatalf("err = %#v, want *APIError status %d code %d", err, tt.status, tt.code)
			}
			for _, s := range []error{ErrUnauthorized, ErrForbidden, ErrNotFound} {
				if errors.Is(err, s) != (s == tt.sentinel) {
					t.Errorf("errors.Is(err, %v) = %v", s, !(s == tt.sentinel))
				}
			}
			if f.n.Load() != 1 {
				t.Errorf("%d requests, want 1 (no retry of a 4xx)", f.n.Load())
			}
		})
	}
}

func TestMalformedSuccess(t *testing.T) {
	for _, body := range []string{`{"messages":[]}`, `{"total_results":"x"}`, `<html>`} {
		f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) { write(w, 200, body) })
		from, to := window()
		_, err := f.client().CountMessages(context.Background(), guildA, "", from, to)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != 200 {
			t.Errorf("body %s: err = %v, want *APIError", body, err)
		}
	}
}

// TestRetried: a 5xx or a connection dying without an answer is retried; each failed attempt is
// counted under its status.
func TestRetried(t *testing.T) {
	for _, tt := range []struct {
		name     string
		failures int64
		fail     func(n int64, w http.ResponseWriter)
		status   string // one of the failures' label in requests_total
	}{
		{"5xx", 3, func(n int64, w http.ResponseWriter) { write(w, 500+int(n), `{"message":"oops","code":0}`) }, "502"},
		{"network error", 1, func(_ int64, w http.ResponseWriter) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close() // the connection dies without an answer
			}
		}, "error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
				if n <= tt.failures {
					tt.fail(n, w)
					return
				}
				searchOK(w, 7)
			})
			before := testutil.ToFloat64(metricRequests.WithLabelValues(routeSearch, tt.status))
			from, to := window()
			n, err := f.client().CountMessages(context.Background(), guildA, "", from, to)
			if err != nil || n != 7 {
				t.Fatalf("CountMessages = %d, %v", n, err)
			}
			if f.n.Load() != tt.failures+1 {
				t.Errorf("%d requests, want %d", f.n.Load(), tt.failures+1)
			}
			if d := testutil.ToFloat64(metricRequests.WithLabelValues(routeSearch, tt.status)) - before; d != 1 {
				t.Errorf("requests_total{status=%s} grew by %v, want 1", tt.status, d)
			}
		})
	}
}

func TestRetry5xxExhausted(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		write(w, 503, `{"message":"upstream","code":0}`)
	})
	from, to := window()
	_, err := f.client(func(c *Config) { c.MaxRetries = 2 }).CountMessages(context.Background(), guildA, "", from, to)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("err = %v, want *APIError 503", err)
	}
	if f.n.Load() != 3 {
		t.Errorf("%d requests, want 3 (1 + MaxRetries)", f.n.Load())
	}
	if gap := f.at(2).Sub(f.at(1)); gap < 5*time.Millisecond {
		t.Errorf("second retry after %s: no backoff", gap)
	}
}

func TestNetworkErrorExhausted(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {})
	url := f.URL
	f.Close() // nothing listens any more
	c := New(Config{BaseURL: url, MaxRetries: 2, BackoffMin: time.Millisecond, BackoffMax: 2 * time.Millisecond})
	_, err := c.Guild(context.Background(), guildA)
	var ae *APIError
	if err == nil || errors.As(err, &ae) || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a transport error", err)
	}
}

func TestIndexNotReady(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n <= 2 {
			write(w, 202, `{"message":"Index not yet available. Try again later","code":110000,"documents_indexed":0,"retry_after":0.15}`)
			return
		}
		searchOK(w, 11)
	})
	before := testutil.ToFloat64(metricWait.WithLabelValues(waitIndex))
	from, to := window()
	n, err := f.client().CountMessages(context.Background(), guildA, "", from, to)
	if err != nil || n != 11 {
		t.Fatalf("CountMessages = %d, %v", n, err)
	}
	if gap := f.at(1).Sub(f.at(0)); gap < 150*time.Millisecond {
		t.Errorf("retried after %s, want >= retry_after 150ms", gap)
	}
	if w := testutil.ToFloat64(metricWait.WithLabelValues(waitIndex)) - before; w < 0.29 {
		t.Errorf("wait_seconds_total{index_warmup} grew by %v, want >= 0.3", w)
	}
}

func TestIndexNeverReady(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		write(w, 202, `{"message":"Index not yet available. Try again later","code":110000,"retry_after":0.001}`)
	})
	from, to := window()
	_, err := f.client(func(c *Config) { c.MaxRetries = 3 }).CountMessages(context.Background(), guildA, "", from, to)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 202 || ae.Code != 110000 {
		t.Fatalf("err = %v, want *APIError 202/110000", err)
	}
	if f.n.Load() != 4 {
		t.Errorf("%d requests, want 4", f.n.Load())
	}
}

// whileLimited runs limited, a call whose first answer is a 429, and 50 ms later (its 429 has
// arrived) other, a call that the 429 may or may not hold; it returns once both have, with the
// time from the start at which other returned and at which both had.
func whileLimited(limited, other func()) (otherDone, bothDone time.Duration) {
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(limited)
	time.Sleep(50 * time.Millisecond)
	other()
	otherDone = time.Since(start)
	wg.Wait()
	return otherDone, time.Since(start)
}

func TestRouteRateLimited(t *testing.T) {
	var slowGuildDone atomic.Int64
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, guildA) && n == 1 {
			w.Header().Set("X-RateLimit-Scope", "user")
			w.Header().Set("Retry-After", "1")
			write(w, 429, `{"message":"You are being rate limited.","retry_after":0.8,"global":false}`)
			return
		}
		if strings.Contains(r.URL.Path, guildB) {
			slowGuildDone.Store(time.Now().UnixNano())
		}
		searchOK(w, 5)
	})
	c := f.client()
	before := testutil.ToFloat64(metricRateLimited.WithLabelValues("user"))
	from, to := window()
	other, both := whileLimited(func() {
		n, err := c.CountMessages(context.Background(), guildA, "", from, to)
		if err != nil || n != 5 {
			t.Errorf("guild A: %d, %v", n, err)
		}
	}, func() {
		n, err := c.CountMessages(context.Background(), guildB, "", from, to)
		if err != nil || n != 5 {
			t.Errorf("guild B: %d, %v", n, err)
		}
	})
	if other > 600*time.Millisecond {
		t.Errorf("a 429 on guild A's bucket held guild B for %s", other)
	}
	if both < 800*time.Millisecond {
		t.Errorf("guild A retried after %s, before retry_after 0.8 s", both)
	}
	if d := testutil.ToFloat64(metricRateLimited.WithLabelValues("user")) - before; d != 1 {
		t.Errorf("rate_limited_total{user} grew by %v, want 1", d)
	}
	if got := f.n.Load(); got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
}

func TestGlobalRateLimited(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("X-RateLimit-Global", "true")
			w.Header().Set("X-RateLimit-Scope", "global")
			write(w, 429, `{"message":"You are being rate limited.","retry_after":0.3,"global":true}`)
			return
		}
		searchOK(w, 1)
	})
	c := f.client()
	before := testutil.ToFloat64(metricRateLimited.WithLabelValues("global"))
	from, to := window()
	other, _ := whileLimited(func() {
		if _, err := c.CountMessages(context.Background(), guildA, "", from, to); err != nil {
			t.Error(err)
		}
	}, func() {
		// Another guild, another route: still held by the global pause.
		if _, err := c.Channels(context.Background(), guildB); err == nil {
			t.Error("Channels decoded a search answer")
		}
	})
	if other < 300*time.Millisecond {
		t.Errorf("request on another route sent %s after a global 429 of 0.3 s", other)
	}
	if d := testutil.ToFloat64(metricRateLimited.WithLabelValues("global")) - before; d != 1 {
		t.Errorf("rate_limited_total{global} grew by %v, want 1", d)
	}
}

func TestRateLimitedWithoutBody(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "0.2")
			write(w, 429, `<html>slow down</html>`)
			return
		}
		searchOK(w, 1)
	})
	from, to := window()
	if _, err := f.client().CountMessages(context.Background(), guildA, "", from, to); err != nil {
		t.Fatal(err)
	}
	if gap := f.at(1).Sub(f.at(0)); gap < 200*time.Millisecond {
		t.Errorf("retried after %s, want >= Retry-After 0.2 s", gap)
	}
}

func TestRateLimitedForever(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		write(w, 429, `{"message":"You are being rate limited.","retry_after":0,"global":false}`)
	})
	from, to := window()
	_, err := f.client().CountMessages(context.Background(), guildA, "", from, to)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 429 {
		t.Fatalf("err = %v, want *APIError 429", err)
	}
	if got := f.n.Load(); got != maxRateLimited+1 {
		t.Errorf("%d requests, want %d", got, maxRateLimited+1)
	}
}

// bucketHeaders answers like Discord's per-route limit: limit requests per
// window per bucket.
func bucketHeaders(w http.ResponseWriter, bucket string, limit, remaining int, resetAfter time.Duration) {
	h := w.Header()
	h.Set("X-RateLimit-Bucket", bucket)
	h.Set("X-RateLimit-Limit", fmt.Sprint(limit))
	h.Set("X-RateLimit-Remaining", fmt.Sprint(remaining))
	h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", resetAfter.Seconds()))
}

func TestBucketRemainingZero(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			bucketHeaders(w, "b1", 1, 0, 300*time.Millisecond)
		} else {
			bucketHeaders(w, "b1", 1, 0, time.Second)
		}
		searchOK(w, 1)
	})
	c := f.client()
	from, to := window()
	ctx := context.Background()
	for range 2 {
		if _, err := c.CountMessages(ctx, guildA, "", from, to); err != nil {
			t.Fatal(err)
		}
	}
	if gap := f.at(1).Sub(f.at(0)); gap < 300*time.Millisecond {
		t.Errorf("second request %s after the first, want >= Reset-After 0.3 s", gap)
	}
	// Another guild has its own bucket (the major parameter), even with the same hash.
	start := time.Now()
	if _, err := c.CountMessages(ctx, guildB, "", from, to); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("guild B waited %s for guild A's bucket", d)
	}
}

func TestSharedBucketLearned(t *testing.T) {
	// /guilds/{id} and /guilds/{id}/channels share bucket "meta", of one request per 0.3 s.
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		bucketHeaders(w, "meta", 1, 0, 300*time.Millisecond)
		if strings.HasSuffix(r.URL.Path, "/channels") {
			write(w, 200, `[]`)
			return
		}
		write(w, 200, `{"id":"`+guildA+`","name":"A","icon":null,"banner":null}`)
	})
	c := f.client()
	ctx := context.Background()
	if _, err := c.Guild(ctx, guildA); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Channels(ctx, guildA); err != nil { // first of its route: discovers "meta" is exhausted
		t.Fatal(err)
	}
	if _, err := c.Guild(ctx, guildA); err != nil {
		t.Fatal(err)
	}
	// The channels route was not yet known to share the bucket, so it went at
	// once; after that, the shared window is honoured.
	if gap := f.at(2).Sub(f.at(1)); gap < 300*time.Millisecond {
		t.Errorf("third request %s after the second, want >= 0.3 s (shared bucket)", gap)
	}
}

func TestBucketConcurrent(t *testing.T) {
	// A fixed window of 3 requests per 200 ms, enforced: a client that overshoots gets 429s.
	const limit, win = 3, 200 * time.Millisecond
	var mu sync.Mutex
	var start time.Time
	count := 0
	var over atomic.Int64
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		now := time.Now()
		if start.IsZero() || now.Sub(start) >= win {
			start, count = now, 0
		}
		count++
		c, reset := count, start.Add(win).Sub(now)
		mu.Unlock()
		if c > limit {
			over.Add(1)
			bucketHeaders(w, "s", limit, 0, reset)
			write(w, 429, fmt.Sprintf(`{"message":"limited","retry_after":%.3f,"global":false}`, reset.Seconds()))
			return
		}
		bucketHeaders(w, "s", limit, limit-c, reset)
		searchOK(w, 1)
	})
	c := f.client()
	from, to := window()
	var wg sync.WaitGroup
	t0 := time.Now()
	for range 12 {
		wg.Go(func() {
			if _, err := c.CountMessages(context.Background(), guildA, "", from, to); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if over.Load() != 0 {
		t.Errorf("%d requests over the bucket limit", over.Load())
	}
	// 12 requests at 3 per 200 ms need at least 3 full windows.
	if d := time.Since(t0); d < 3*win {
		t.Errorf("12 requests in %s, faster than the limit allows", d)
	}
}

// departures is a RoundTripper that notes when each request leaves the client.
type departures struct {
	mu    sync.Mutex
	times []time.Time
}

func (d *departures) RoundTrip(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	d.times = append(d.times, time.Now())
	d.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func TestGlobalPacing(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) { searchOK(w, 1) })
	// Departures are timed where they leave the client: arrivals at the server would add the
	// machine's scheduling noise, which the cap cannot control.
	dep := &departures{}
	c := f.client(func(c *Config) { c.GlobalRate = 50; c.HTTPClient = &http.Client{Transport: dep} })
	from, to := window()
	var wg sync.WaitGroup
	start := time.Now()
	guilds := []string{guildA, guildB}
	for i := range 11 {
		wg.Go(func() {
			if _, err := c.CountMessages(context.Background(), guilds[i%2], "", from, to); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d < 190*time.Millisecond {
		t.Errorf("11 requests at 50/s took %s, want >= 200 ms", d)
	}
	dep.mu.Lock()
	times := slices.Clone(dep.times)
	dep.mu.Unlock()
	slices.SortFunc(times, time.Time.Compare)
	for i := 1; i < len(times); i++ {
		// Request i leaves no earlier than i intervals after the first (the
		// pacer's own tests cover lateness and stalls). The first departure is timed
		// when it reaches the transport, which on a loaded machine can be some
		// milliseconds after its slot and shortens every gap measured from it; half an
		// interval of slack still tells pacing from a burst, whose requests leave within
		// a millisecond of each other.
		if d := times[i].Sub(times[0]); d < time.Duration(i)*20*time.Millisecond-10*time.Millisecond {
			t.Errorf("request %d left %s after the first, want >= %d × 20 ms", i, d, i)
		}
	}
}

func TestSlowAnswerContextDeadline(t *testing.T) {
	release := make(chan struct{})
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		searchOK(w, 1)
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	from, to := window()
	endsWith(t, context.DeadlineExceeded, func() error { _, err := f.client().CountMessages(ctx, guildA, "", from, to); return err })
}

// endsWith runs call, whose context ends within 100 ms, and wants it to return that context's
// error want within a second: whatever it waits on, the call notices.
func endsWith(t *testing.T, want error, call func() error) {
	t.Helper()
	start := time.Now()
	if err := call(); !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the context's end took %s to be noticed", d)
	}
}

func TestSlowAnswerAttemptTimeout(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		searchOK(w, 9)
	})
	c := f.client(func(c *Config) { c.HTTPClient = &http.Client{Timeout: 100 * time.Millisecond} })
	from, to := window()
	n, err := c.CountMessages(context.Background(), guildA, "", from, to)
	if err != nil || n != 9 {
		t.Fatalf("CountMessages = %d, %v (a timed-out attempt must be retried)", n, err)
	}
}

func TestCancelDuringRateLimitWait(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		write(w, 429, `{"message":"limited","retry_after":30,"global":true}`)
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	from, to := window()
	endsWith(t, context.Canceled, func() error { _, err := f.client().CountMessages(ctx, guildA, "", from, to); return err })
}

func TestCancelDuringBackoff(t *testing.T) {
	f := newFakeAPI(t, func(n int64, w http.ResponseWriter, r *http.Request) { write(w, 500, `{}`) })
	c := f.client(func(c *Config) { c.BackoffMin, c.BackoffMax = 30*time.Second, time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	endsWith(t, context.DeadlineExceeded, func() error { _, err := c.Guild(ctx, guildA); return err })
}

func TestBackoffDelay(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 2 * time.Second
	tests := []struct {
		attempt int
		j       float64
		want    time.Duration
	}{
		{0, 0, 50 * time.Millisecond},
		{0, 1, 100 * time.Millisecond},
		{1, 0.5, 150 * time.Millisecond},
		{3, 0, 400 * time.Millisecond},
		{5, 0, time.Second}, // 3.2 s capped at 2 s
		{5, 1, 2 * time.Second},
		{63, 0.5, 1500 * time.Millisecond},
		{1000, 0, time.Second},
		{2, -1, 200 * time.Millisecond},
		{2, 7, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := backoffDelay(tt.attempt, lo, hi, tt.j); got != tt.want {
			t.Errorf("backoffDelay(%d, j=%v) = %s, want %s", tt.attempt, tt.j, got, tt.want)
		}
	}
}

func TestParseRateLimited(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name   string
		h      http.Header
		body   string
		wait   time.Duration
		global bool
		scope  string
	}{
		{"route", hdr("X-RateLimit-Scope", "user"), `{"retry_after":0.5,"global":false}`, 500 * time.Millisecond, false, "user"},
		{"global in body", hdr(), `{"retry_after":1.25,"global":true}`, 1250 * time.Millisecond, true, "global"},
		{"global header", hdr("X-RateLimit-Global", "true"), `{"retry_after":0.1}`, 100 * time.Millisecond, true, "global"},
		{"shared", hdr("X-RateLimit-Scope", "shared"), `{"retry_after":2}`, 2 * time.Second, false, "shared"},
		{"no body: Retry-After", hdr("Retry-After", "3"), ``, 3 * time.Second, false, "user"},
		{"no body: Reset-After", hdr("X-RateLimit-Reset-After", "0.75"), `oops`, 750 * time.Millisecond, false, "user"},
		{"nothing", hdr(), ``, time.Second, false, "user"},
		{"negative", hdr(), `{"retry_after":-4}`, 0, false, "user"},
		{"unknown scope", hdr("X-RateLimit-Scope", "weird"), `{"retry_after":0}`, 0, false, "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, global, scope := parseRateLimited(tt.h, []byte(tt.body))
			if wait != tt.wait || global != tt.global || scope != tt.scope {
				t.Fatalf("= (%s, %v, %q), want (%s, %v, %q)", wait, global, scope, tt.wait, tt.global, tt.scope)
			}
		})
	}
}

func TestMessageBearing(t *testing.T) {
	for typ := -1; typ <= 20; typ++ {
		want := typ == 0 || typ == 2 || typ == 5 || typ == 13
		if MessageBearing(typ) != want {
			t.Errorf("MessageBearing(%d) = %v", typ, !want)
		}
	}
}
