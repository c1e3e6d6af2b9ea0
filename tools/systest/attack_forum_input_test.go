//go:build faults

package systest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"forumstats.local/tools/stack"
)

// clientFrom is an HTTP client whose connections leave from the loopback address ip, so that the
// service sees requests from distinct client addresses without any proxy header.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
}

// TestAttackForumInputFieldBomb: 20 concurrent bodies of about 1 MB holding 110,000 fields each,
// three rounds, against one forum-svc: every answer must be 400 too_many_fields in the envelope,
// and the service's peak resident set may grow by less than 64 MiB.
func TestAttackForumInputFieldBomb(t *testing.T) {
	fx := stack.NewForumFixture(30, 20)
	svc := service(t, stack.Forum, forumEnv(t, postgres(t), fx)...)
	body := strings.TrimSuffix(strings.Repeat("f=abcdef&", 110_000), "&") // 989,999 bytes
	target := fmt.Sprintf("%s/api/conversations/%d/mark-unread", svc.URL, fx.Own)
	client := clientFrom("127.0.0.1")
	send := func() (int, string, error) {
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
		req.Header.Set("Forum-Api-Key", fx.UserKey)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, errorCode(string(b)), nil
	}
	if _, _, err := send(); err != nil { // warm: the first request's allocations are not the attack's
		t.Fatalf("warm-up: %v", err)
	}
	before, err := svc.Memory()
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.ResetPeak(); err != nil {
		t.Fatal(err)
	}
	const concurrent, rounds = 20, 3
	statuses := map[string]int{}
	var mu sync.Mutex
	start := time.Now()
	for range rounds {
		var wg sync.WaitGroup
		for range concurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, code, err := send()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					statuses["transport error: "+err.Error()]++
					return
				}
				statuses[strconv.Itoa(st)+" "+code]++
			}()
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	after, err := svc.Memory()
	if err != nil {
		t.Fatal(err)
	}
	growth := after.Peak - before.RSS
	report(t, "%d × %d concurrent bodies of %d bytes / 110,000 fields in %v: answers %v; RSS before %s, peak %s (+%s)",
		rounds, concurrent, len(body), elapsed.Round(time.Millisecond), statuses, stack.MiB(before.RSS), stack.MiB(after.Peak), stack.MiB(growth))
	if statuses["400 too_many_fields"] != rounds*concurrent {
		t.Errorf("answers %v; want every one 400 too_many_fields", statuses)
	}
	if growth >= 64<<20 {
		t.Errorf("peak RSS grew by %s; bound 64 MiB", stack.MiB(growth))
	}
}

// apiKeyScans is the number of scans of api_keys so far (sequential and by index): each key
// lookup is one. The counters of other sessions arrive after they idle (PostgreSQL flushes a
// backend's statistics at most once a second, and 10 s after it goes idle), so the caller waits.
func apiKeyScans(t *testing.T, url string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'api_keys'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// statsSettle is how long the attack waits for the service's sessions to report their scans.
const statsSettle = 12 * time.Second

// flood sends n requests with random keys at rate a second, each from the loopback address
// addr(i), and returns the answers by status and whether every 429 carried Retry-After.
func flood(t *testing.T, svc *stack.Service, fx stack.ForumFixture, n int, rate float64, addr func(i int) string) (map[int]int, bool) {
	t.Helper()
	clients := map[string]*http.Client{}
	var mu sync.Mutex
	statuses := map[int]int{}
	retryAfter := true
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := range n {
		<-tick.C
		ip := addr(i)
		c, ok := clients[ip]
		if !ok {
			c = clientFrom(ip)
			clients[ip] = c
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/conversations/%d", svc.URL, fx.Own), nil)
			req.Header.Set("Forum-Api-Key", fmt.Sprintf("random-%d-%d-0123456789abcdef0123456789", time.Now().UnixNano(), i))
			res, err := c.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			statuses[res.StatusCode]++
			if res.StatusCode == 429 {
				if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 || errorCode(string(b)) != "too_many_requests" {
					retryAfter = false
				}
			}
		}()
	}
	wg.Wait()
	return statuses, retryAfter
}

// TestAttackForumInputAuthFlood: 600 random keys at 150 a second from one address, then 600 from
// 200 addresses (3 each, under the per-address burst), with Redis, against a forum-svc with the
// default failure limits (10 at once, 30 a minute per address) and a lookup budget of 20 a second.
// From one address: mostly 429 with Retry-After once its failures are spent; from many: the
// lookups stay within the budget. Meanwhile a valid key from another address keeps getting 200.
// The lookups are counted as PostgreSQL's scans of api_keys.
func TestAttackForumInputAuthFlood(t *testing.T) {
	ctx := context.Background()
	pg := postgres(t)
	fx := stack.NewForumFixture(30, 20)
	url, err := stack.SeedForum(ctx, pg, bin(t, stack.Forum), dbName("forum"), tempDir(t), fx)
	if err != nil {
		t.Fatal(err)
	}
	const budget = 20
	svc := service(t, stack.Forum, forumURLEnv(url, "REDIS_URL="+redis(t).URL(), "AUTH_FAILURES_PER_MINUTE=30",
		"AUTH_FAILURES_BURST=10", "AUTH_KEY_LOOKUPS_PER_SECOND="+strconv.Itoa(budget))...)

	// The valid key, from its own address, all along.
	stop := make(chan struct{})
	var validDone sync.WaitGroup
	validStatuses := map[int]int{}
	validDone.Add(1)
	go func() {
		defer validDone.Done()
		c := clientFrom("127.0.0.250")
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/conversations/%d", svc.URL, fx.Own), nil)
			req.Header.Set("Forum-Api-Key", fx.UserKey)
			res, err := c.Do(req)
			if err != nil {
				validStatuses[0]++
				continue
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			validStatuses[res.StatusCode]++
		}
	}()

	for _, phase := range []struct {
		name string
		addr func(i int) string
	}{
		{"one address", func(int) string { return "127.0.0.1" }},
		{"200 addresses", func(i int) string { return fmt.Sprintf("127.0.1.%d", 1+i%200) }},
	} {
		time.Sleep(statsSettle)
		before := apiKeyScans(t, url)
		start := time.Now()
		statuses, retryAfter := flood(t, svc, fx, 600, 150, phase.addr)
		elapsed := time.Since(start)
		time.Sleep(statsSettle)
		scans := apiKeyScans(t, url) - before
		// The budget: its burst, then its rate over the flood (the valid key's lookups count too).
		allowed := int64(budget + budget*elapsed.Seconds() + 1)
		report(t, "%s: 600 random keys at 150/s in %v: %v, Retry-After on every 429: %v; api_keys scans %d (budget %d)",
			phase.name, elapsed.Round(time.Millisecond), statuses, retryAfter, scans, allowed)
		if !retryAfter {
			t.Errorf("%s: a 429 without Retry-After or the envelope", phase.name)
		}
		if scans > allowed {
			t.Errorf("%s: %d scans of api_keys; the budget allows %d", phase.name, scans, allowed)
		}
		if statuses[401]+statuses[429] != 600 {
			t.Errorf("%s: %v; want only 401 and 429", phase.name, statuses)
		}
		if phase.name == "one address" && statuses[429] < 550 {
			t.Errorf("%s: %d × 429; want most of the 600 (10 failures at once, one every 2 s)", phase.name, statuses[429])
		}
	}
	close(stop)
	validDone.Wait()
	report(t, "valid key from another address meanwhile: %v", validStatuses)
	if len(validStatuses) != 1 || validStatuses[200] == 0 {
		t.Errorf("valid key from another address: %v; want only 200", validStatuses)
	}
}

// TestAttackForumInputHeaders: a sample of the real binary's answers (success, each kind of
// error, the probes, the document) carries Cache-Control: no-store and X-Content-Type-Options:
// nosniff.
func TestAttackForumInputHeaders(t *testing.T) {
	fx := stack.NewForumFixture(30, 20)
	svc := service(t, stack.Forum, forumEnv(t, postgres(t), fx)...)
	own := strconv.FormatInt(fx.Own, 10)
	protected, total := 0, 0
	for _, tt := range []struct {
		method, path, key, body string
		status                  int
	}{
		{"GET", "/api/conversations/" + own, fx.UserKey, "", 200},
		{"HEAD", "/api/conversations/" + own + "/messages", fx.UserKey, "", 200},
		{"POST", "/api/conversations/" + own + "/star?star=1", fx.UserKey, "", 200},
		{"GET", "/api/conversations/" + own, "", "", 400},
		{"POST", "/api/conversations/" + own + "/mark-unread", fx.UserKey, strings.Repeat("a=1&", 2000), 400},
		{"GET", "/api/conversations/" + own, "no-such-key-0123456789abcdef0123456789", "", 401},
		{"GET", "/api/conversations/" + strconv.FormatInt(fx.Foreign, 10), fx.UserKey, "", 404},
		{"GET", "/nowhere", "", "", 404},
		{"PUT", "/api/conversations/" + own, "", "", 405},
		{"POST", "/api/conversations/" + own + "/mark-read", fx.UserKey, "date=1&pad=" + strings.Repeat("x", 1<<20), 413},
		{"GET", "/healthz", "", "", 200},
		{"GET", "/readyz", "", "", 200},
		{"GET", "/metrics", "", "", 200},
		{"GET", "/api/openapi.json", "", "", 200},
	} {
		req, _ := http.NewRequest(tt.method, svc.URL+tt.path, strings.NewReader(tt.body))
		if tt.key != "" {
			req.Header.Set("Forum-Api-Key", tt.key)
		}
		if tt.body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		total++
		if res.Header.Get("Cache-Control") == "no-store" && res.Header.Get("X-Content-Type-Options") == "nosniff" {
			protected++
		}
		if res.StatusCode != tt.status || res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %.60s: %d, Cache-Control %q, X-Content-Type-Options %q; want %d, no-store, nosniff", tt.method, tt.path,
				res.StatusCode, res.Header.Get("Cache-Control"), res.Header.Get("X-Content-Type-Options"), tt.status)
		}
	}
	report(t, "%d of %d answers (200, 400, 401, 404, 405, 413, probes, document) carry no-store and nosniff", protected, total)
}
