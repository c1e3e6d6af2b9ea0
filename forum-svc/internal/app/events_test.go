package app

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/rdb"
	"forumstats.local/shared/testutil"
)

type streamEvent struct{ id, typ, data string }

// readStream sends the events of an SSE body on the channel, closed when the body ends.
func readStream(body io.Reader) <-chan streamEvent {
	out := make(chan streamEvent, 1000)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		var e streamEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.typ != "" {
					out <- e
				}
				e = streamEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return out
}

const (
	aliceKey = "events-alice-key-0123456789abcdef0123"
	bobKey   = "events-bob-key-0123456789abcdef012345"
)

// Two instances on one PostgreSQL and one Redis: a stream on the second gets the replies written
// through the first, in order, none lost and none twice, while the second's Redis works, while it
// is lost (it polls the log) and after it is back; the stream ends when its instance stops.
func TestEventsAcrossInstances(t *testing.T) {
	if _, err := testutil.PostgresURL(); err != nil {
		t.Fatalf("no PostgreSQL (TEST_POSTGRES_URL, 127.0.0.1:5432 or Docker): %v", err)
	}
	redisURL, err := testutil.RedisURL()
	if err != nil {
		t.Fatalf("no Redis (TEST_REDIS_URL, 127.0.0.1:6379 or Docker): %v", err)
	}
	ctx := context.Background()
	gdb := testutil.OpenDB(t, testutil.NewDatabase(t, migrations.Set))
	alice, bob, date := int64(1), int64(2), int64(1700000000)
	scopes := []string{"conversation:read", "conversation:write"}
	f := &seed.File{
		Users: []seed.User{{UserID: 1, Username: "alice"}, {UserID: 2, Username: "bob"}},
		Conversations: []seed.Conversation{{ConversationID: 10, Title: "T", UserID: 1, Recipients: []int64{2},
			Messages: []seed.Message{{MessageID: 100, UserID: 1, Message: "hello", MessageDate: &date}}}},
		APIKeys: []seed.APIKey{{Key: aliceKey, Type: "user", UserID: &alice, Scopes: scopes},
			{Key: bobKey, Type: "user", UserID: &bob, Scopes: scopes}},
	}
	if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testutil.NewProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	direct, err := rdb.Open(ctx, redisURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	viaProxy := *u
	viaProxy.Host = proxy.Addr()
	proxied, err := rdb.Open(ctx, viaProxy.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxied.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{RateLimit: ratelimit.Config{PerMinute: 60000, Burst: 6000}}
	writer, err := New(ctx, cfg, log, WithDB(gdb), WithRedis(direct))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(writer.Close)
	reader, err := New(ctx, cfg, log, WithDB(gdb), WithRedis(proxied))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reader.Handler())
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/events", nil)
	req.Header.Set("Forum-Api-Key", bobKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := readStream(resp.Body)

	n := 0
	reply := func() {
		t.Helper()
		n++
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/api/conversation-messages",
			strings.NewReader(url.Values{"conversation_id": {"10"}, "message": {"reply " + strconv.Itoa(n)}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Forum-Api-Key", aliceKey)
		writer.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("reply %d: %d %s", n, w.Code, w.Body)
		}
	}
	lastID := int64(0)
	seen := 0
	// expect reads the messages up to reply n: each once, in order, with ids one apart.
	expect := func(within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for seen < n {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatal("the stream ended")
				}
				if e.typ != "message_created" {
					continue
				}
				id, _ := strconv.ParseInt(e.id, 10, 64)
				if lastID != 0 && id != lastID+1 {
					t.Fatalf("event id %d after %d", id, lastID)
				}
				lastID = id
				seen++
				if !strings.Contains(e.data, `"message":"reply `+strconv.Itoa(seen)+`"`) {
					t.Fatalf("event %d: %s, want reply %d", id, e.data, seen)
				}
			case <-deadline:
				t.Fatalf("%d of %d replies within %v", seen, n, within)
			}
		}
	}
	// The first event (unread_count) tells the stream is subscribed.
	if e := <-events; e.typ != "unread_count" {
		t.Fatalf("first event %+v", e)
	}
	// Both subscribed: the reader polls only every 15 s, so what arrives within 5 s came over Redis.
	waitFor(t, "both instances subscribed", func() bool { return writer.hub.Subscribed() && reader.hub.Subscribed() })
	for range 3 {
		reply()
	}
	expect(5 * time.Second)
	proxy.SetDown(true) // the reader's Redis is lost: it polls the log
	waitFor(t, "the reader's subscription lost", func() bool { return !reader.hub.Subscribed() })
	for range 3 {
		reply()
	}
	expect(10 * time.Second)
	proxy.SetDown(false)
	waitFor(t, "the reader subscribed again", reader.hub.Subscribed)
	for range 3 {
		reply()
	}
	expect(10 * time.Second)
	select {
	case e := <-events:
		if e.typ == "message_created" {
			t.Fatalf("an event twice, or one more: %+v", e)
		}
	case <-time.After(1500 * time.Millisecond):
	}
	// The instance stops: its stream ends.
	reader.hub.Close()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				reader.Close()
				return
			}
		case <-deadline:
			t.Fatal("the stream did not end when its instance stopped")
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 15 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// On shutdown (Run's context, SIGTERM in `serve`) the open streams end and Run returns without
// waiting for their clients.
func TestRunEndsStreams(t *testing.T) {
	ctx := context.Background()
	gdb, err := openDB(ctx, "sqlite:"+t.TempDir()+"/forum.db", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	bob, date := int64(2), int64(1700000000)
	f := &seed.File{Users: []seed.User{{UserID: 2, Username: "bob"}},
		APIKeys: []seed.APIKey{{Key: bobKey, Type: "user", UserID: &bob, Scopes: []string{"conversation:read"}}}}
	if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	cfg := Config{RateLimit: ratelimit.Config{PerMinute: 600, Burst: 60}}
	cfg.HTTPAddr = "127.0.0.1:0"
	a, err := New(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)), WithDB(gdb))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(runCtx) }()
	var addr string
	waitFor(t, "listening", func() bool {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(line, "msg=listening") {
				_, after, _ := strings.Cut(line, "addr=")
				addr = strings.Fields(after)[0]
				return true
			}
		}
		return false
	})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/events", nil)
	req.Header.Set("Forum-Api-Key", bobKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readStream(resp.Body)
	if e := <-events; e.typ != "unread_count" {
		t.Fatalf("first event %+v", e)
	}
	stopped := time.Now()
	stop()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of its context's end with a stream open")
	}
	for range events { // the stream's end
	}
	if d := time.Since(stopped); d > 5*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
}
