package collect

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
)

// simDiscord is a RoundTripper that plays Discord for the simulation: a global limit, a bucket
// per guild for /guilds/{id} and /channels (shared hash) and one for the search (per guild, fixed
// windows that start at a request, as Discord's), latency before each answer, and tiny bodies.
// It records every departure (when the client hands a request over) and every 429.
type simDiscord struct {
	latency     time.Duration
	channels    int
	searchLimit int
	metaLimit   int
	globalLimit int

	mu         sync.Mutex
	start      time.Time
	departures map[int64]int // second since start → requests that left in it
	arrivals   map[int64]int // second since start → requests that arrived in it (the global limit)
	windows    map[string]*simWindow
	requests   int
	limited    int
}

type simWindow struct {
	start time.Time
	count int
}

func newSimDiscord(latency time.Duration, channels int) *simDiscord {
	return &simDiscord{latency: latency, channels: channels, searchLimit: 10, metaLimit: 25, globalLimit: 50,
		start: time.Now(), departures: map[int64]int{}, arrivals: map[int64]int{}, windows: map[string]*simWindow{}}
}

func (s *simDiscord) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.requests++
	s.departures[int64(time.Since(s.start)/time.Second)]++
	s.mu.Unlock()
	time.Sleep(s.latency)
	path := strings.TrimPrefix(req.URL.Path, "/api/v10/guilds/")
	guild, rest, _ := strings.Cut(path, "/")
	bucket, limit := "meta", s.metaLimit
	if rest == "messages/search" {
		bucket, limit = "search", s.searchLimit
	}
	now := time.Now()
	h := http.Header{}
	s.mu.Lock()
	sec := int64(now.Sub(s.start) / time.Second)
	s.arrivals[sec]++
	globalOK := s.arrivals[sec] <= s.globalLimit
	key := bucket + "|" + guild
	win := s.windows[key]
	if win == nil || !now.Before(win.start.Add(time.Second)) {
		win = &simWindow{start: now}
		s.windows[key] = win
	}
	win.count++
	count := win.count
	bucketOK := count <= limit
	reset := win.start.Add(time.Second).Sub(now)
	if !globalOK || !bucketOK {
		s.limited++
	}
	s.mu.Unlock()
	h.Set("X-RateLimit-Bucket", bucket)
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, limit-count)))
	h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", reset.Seconds()))
	switch {
	case !globalOK:
		h.Set("X-RateLimit-Global", "true")
		return simAnswer(req, 429, h, `{"message":"You are being rate limited.","retry_after":1,"global":true}`), nil
	case !bucketOK:
		return simAnswer(req, 429, h, fmt.Sprintf(`{"message":"You are being rate limited.","retry_after":%.3f,"global":false}`, reset.Seconds())), nil
	case rest == "":
		return simAnswer(req, 200, h, `{"id":"`+guild+`","name":"g","icon":null,"banner":null}`), nil
	case rest == "channels":
		var b strings.Builder
		b.WriteString("[")
		for i := range s.channels {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":"%d","name":"c%d","type":0,"parent_id":null}`, 1000+i, i)
		}
		b.WriteString("]")
		return simAnswer(req, 200, h, b.String()), nil
	default:
		return simAnswer(req, 200, h, `{"total_results":7}`), nil
	}
}

func simAnswer(req *http.Request, status int, h http.Header, body string) *http.Response {
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}
}

// noBackfill is a memStore whose servers already have their backfill days: the simulated pass
// is the steady one (today, yesterday, both months) of every server.
type noBackfill struct{ *memStore }

func (noBackfill) MissingDays(context.Context, string, []string) ([]string, error) { return nil, nil }

// simulate runs one pass over servers × channels against simDiscord under a virtual clock.
func simulate(t *testing.T, servers, channels int, latency time.Duration) (res Result, sim *simDiscord) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts in 2000, before Discord's epoch; move it to the present.
		time.Sleep(time.Until(ts("2026-11-19T09:00:00Z")))
		sim = newSimDiscord(latency, channels)
		st := newMemStore()
		entries := make([]catalog.Entry, servers)
		for i := range entries {
			entries[i] = catalog.Entry{Number: i + 1, Name: "s" + strconv.Itoa(i), GuildID: strconv.Itoa(100000 + i)}
		}
		if err := st.SyncCatalog(context.Background(), entries); err != nil {
			t.Fatal(err)
		}
		client := discord.New(discord.Config{BaseURL: "http://discord.sim/api/v10", GlobalRate: 50,
			HTTPClient: &http.Client{Transport: sim}})
		col := New(Config{Discord: client, Store: noBackfill{st}, MaxRPS: 50})
		var err error
		if res, err = col.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	return res, sim
}

// TestSimulationAtScale: a pass over 1,000 servers × 30 channels, answers taking 300 ms, search
// buckets of 10 a second per guild and a global cap of 50 takes requests ÷ 50 (within 5 %),
// never sends more than 50 requests in a second, and meets no 429 — in virtual time, in about
// 3 s of real time. The race detector makes each request some five times dearer: under it the
// test keeps `make test` short with 200 servers (the same checks; the ratio only gets closer to
// 1 with more servers, as the first and last seconds weigh less).
func TestSimulationAtScale(t *testing.T) {
	servers := 1000
	if raceEnabled {
		servers = 200
	}
	if testing.Short() {
		servers = 100
	}
	start := time.Now()
	res, sim := simulate(t, servers, 30, 300*time.Millisecond)
	took := res.Finish.Sub(res.Start)
	bound := time.Duration(float64(sim.requests) / 50 * float64(time.Second))
	ratio := took.Seconds() / bound.Seconds()
	busiest := 0
	for _, n := range sim.departures {
		busiest = max(busiest, n)
	}
	t.Logf("%d servers: %d requests in %s (virtual), requests ÷ 50 = %s, ratio %.3f, busiest second %d, 429s %d, real time %s",
		servers, sim.requests, took.Round(time.Millisecond), bound, ratio, busiest, sim.limited, time.Since(start).Round(time.Millisecond))
	if want := servers * (2 + 4*31); sim.requests != want || int(res.Requests) != want || res.Written != servers*4 {
		t.Errorf("%d requests (%d counted), %d reports, want %d requests and %d reports", sim.requests, res.Requests, res.Written, want, servers*4)
	}
	if ratio > 1.05 {
		t.Errorf("pass took %.3f × requests ÷ 50, want ≤ 1.05", ratio)
	}
	if busiest > 50 {
		t.Errorf("%d requests left in one second, want ≤ 50", busiest)
	}
	if sim.limited != 0 {
		t.Errorf("%d answers were 429", sim.limited)
	}
}
