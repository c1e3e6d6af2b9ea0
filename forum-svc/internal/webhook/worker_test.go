package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/webhook"
	"forumstats.local/forum-svc/migrations"
	sdb "forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	tu "forumstats.local/shared/testutil"
)

// dialects runs body against a migrated database of each dialect.
func dialects(t *testing.T, body func(t *testing.T, gdb *gorm.DB)) {
	t.Run("postgres", func(t *testing.T) { body(t, openDB(t, tu.NewDatabase(t, migrations.Set))) })
	t.Run("sqlite", func(t *testing.T) { body(t, openDB(t, "sqlite:"+filepath.Join(t.TempDir(), "forum.db"))) })
}

func openDB(t *testing.T, url string) *gorm.DB { return openBenchDB(t, url) }

func openBenchDB(t testing.TB, url string) *gorm.DB {
	t.Helper()
	gdb, err := migrate.Open(context.Background(), url, nil, true, migrations.Set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close(gdb) })
	return gdb
}

// idsRenderer renders the change's ids only (the app renders the API's objects).
type idsRenderer struct{}

func (idsRenderer) Data(_ context.Context, c webhook.Change) (webhook.Data, error) {
	return webhook.Data{ConversationID: c.ConversationID, MessageID: c.MessageID, ActorID: c.ActorID}, nil
}

// received is one request a receiver got.
type received struct {
	id, timestamp string
	body          []byte
	verified      error
	at            time.Time
}

// receiver is a webhook target that verifies what it gets and answers with answer(n), n the
// request's number from 1.
type receiver struct {
	*httptest.Server
	key    []byte
	mu     sync.Mutex
	got    []received
	answer func(n int) int
}

func newReceiver(t *testing.T, secret string, answer func(n int) int) *receiver {
	t.Helper()
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{key: key, answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{id: req.Header.Get(webhook.HeaderID), timestamp: req.Header.Get(webhook.HeaderTimestamp),
			body: body, verified: webhook.Verify(r.key, req.Header, body, time.Now()), at: time.Now()})
		n := len(r.got)
		r.mu.Unlock()
		w.WriteHeader(r.answer(n))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func always(status int) func(int) int { return func(int) int { return status } }

// setup starts a receiver answering answer(n) and registers it for every event.
func setup(t *testing.T, gdb *gorm.DB, answer func(int) int) (*receiver, int64) {
	t.Helper()
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t, secret, answer)
	id, err := webhook.Add(context.Background(), gdb, r.URL+"/hook", []string{"*"}, secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return r, id
}

// enqueue commits one change per message id in msgs, of conversation conv, each in its own
// transaction.
func enqueue(t *testing.T, gdb *gorm.DB, conv int64, msgs ...int64) {
	t.Helper()
	for _, m := range msgs {
		err := gdb.Transaction(func(tx *gorm.DB) error {
			return webhook.Enqueue(tx, []webhook.Change{{Type: "message_created", ConversationID: conv, MessageID: m, ActorID: 1, At: 1700000000}}, time.Now())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func newWorker(t *testing.T, gdb *gorm.DB, o webhook.Options) *webhook.Worker {
	t.Helper()
	if o.PollInterval == 0 {
		o.PollInterval = 5 * time.Millisecond
	}
	if o.RetryMin == 0 {
		o.RetryMin = 20 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	w, err := webhook.NewWorker(gdb, idsRenderer{}, o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// run runs w until the test ends.
func run(t *testing.T, w *webhook.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFor polls cond until it holds or 20 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func states(t *testing.T, gdb *gorm.DB) map[string]int {
	t.Helper()
	var rows []struct {
		State string
		N     int
	}
	if err := gdb.Raw(`SELECT state, COUNT(*) AS n FROM webhook_deliveries GROUP BY state`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out
}

func decode(t *testing.T, b []byte) webhook.Body {
	t.Helper()
	var body struct {
		Type      string       `json:"type"`
		Timestamp string       `json:"timestamp"`
		Data      webhook.Data `json:"data"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return webhook.Body{Type: body.Type, Timestamp: body.Timestamp, Data: body.Data}
}

// A failing receiver gets the same delivery again, with the same webhook-id and body and a valid
// signature each time, until it answers 2xx; the first retry waits RetryMin.
func TestRetryThenSuccess(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		rcv, hook := setup(t, gdb, func(n int) int {
			if n < 3 {
				return http.StatusInternalServerError
			}
			return http.StatusNoContent
		})
		enqueue(t, gdb, 7, 70)
		run(t, newWorker(t, gdb, webhook.Options{AllowPrivate: true, RetryMin: 100 * time.Millisecond}))
		waitFor(t, "delivered", func() bool { return states(t, gdb)[webhook.StateDelivered] == 1 })
		got := rcv.requests()
		if len(got) != 3 {
			t.Fatalf("%d requests; want 3", len(got))
		}
		for i, r := range got {
			if r.verified != nil {
				t.Errorf("request %d: %v", i, r.verified)
			}
			if r.id != got[0].id || string(r.body) != string(got[0].body) {
				t.Errorf("request %d: id %s body %s; want those of the first, %s %s", i, r.id, r.body, got[0].id, got[0].body)
			}
		}
		if gap := got[1].at.Sub(got[0].at); gap < 100*time.Millisecond {
			t.Errorf("first retry after %v; want at least RetryMin (100ms)", gap)
		}
		b := decode(t, got[0].body)
		if b.Type != "message.created" || b.Timestamp != "2023-11-14T22:13:20Z" || b.Data.ConversationID != 7 || b.Data.MessageID != 70 {
			t.Errorf("body %s", got[0].body)
		}
		ds, err := webhook.Deliveries(context.Background(), gdb, hook, 10)
		if err != nil || len(ds) != 1 || ds[0].Attempts != 3 || ds[0].LastStatus != 204 || webhook.MessageID(ds[0].ID) != got[0].id {
			t.Errorf("deliveries: %+v, %v", ds, err)
		}
	})
}

// Each conversation's deliveries arrive in the order of their changes, also when attempts fail
// and are retried; conversations go out side by side.
func TestOrderPerConversation(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		rcv, _ := setup(t, gdb, func(n int) int {
			if n%3 == 0 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		const convs, each = 4, 15
		for m := int64(1); m <= each; m++ {
			for c := int64(1); c <= convs; c++ {
				enqueue(t, gdb, c, c*1000+m)
			}
		}
		run(t, newWorker(t, gdb, webhook.Options{AllowPrivate: true, RetryMin: 5 * time.Millisecond, Concurrency: 4}))
		waitFor(t, "all delivered", func() bool { return states(t, gdb)[webhook.StateDelivered] == convs*each })
		last := map[int64]int64{}
		ok := map[string]bool{}
		for _, r := range rcv.requests() {
			d := decode(t, r.body).Data
			if d.MessageID < last[d.ConversationID] {
				t.Fatalf("conversation %d: message %d after %d", d.ConversationID, d.MessageID, last[d.ConversationID])
			}
			if ok[r.id] && d.MessageID != last[d.ConversationID] {
				t.Fatalf("%s sent again after it was delivered", r.id)
			}
			last[d.ConversationID] = d.MessageID
			ok[r.id] = true
		}
		for c := int64(1); c <= convs; c++ {
			if last[c] != c*1000+each {
				t.Errorf("conversation %d: last message %d", c, last[c])
			}
		}
	})
}

// A delivery still failing when its window ends is dead-lettered, counted, shown as dead, and
// its conversation's next delivery goes out; redeliver sends it again with the same id.
func TestDeadLetter(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		var fail sync.Map
		rcv, hook := setup(t, gdb, func(int) int { return http.StatusOK })
		rcv.answer = func(n int) int {
			if _, bad := fail.Load("on"); bad && n <= 1000 {
				return http.StatusBadGateway
			}
			return http.StatusOK
		}
		fail.Store("on", true)
		enqueue(t, gdb, 3, 30)
		dead := testutil.ToFloat64(webhook.AttemptsCounter(webhook.StateDead))
		w := newWorker(t, gdb, webhook.Options{AllowPrivate: true, RetryMin: 30 * time.Millisecond, Window: 300 * time.Millisecond})
		run(t, w)
		waitFor(t, "dead-lettered", func() bool { return states(t, gdb)[webhook.StateDead] == 1 })
		if got := testutil.ToFloat64(webhook.AttemptsCounter(webhook.StateDead)) - dead; got != 1 {
			t.Errorf("dead-lettered counter +%v; want +1", got)
		}
		n := len(rcv.requests())
		if n < 2 || n > 6 {
			t.Errorf("%d attempts in a 300 ms window from 30 ms doubling; want 2 to 6", n)
		}
		fail.Delete("on")
		enqueue(t, gdb, 3, 31)
		waitFor(t, "the next one delivered", func() bool { return states(t, gdb)[webhook.StateDelivered] == 1 })
		ds, err := webhook.Deliveries(context.Background(), gdb, hook, 10)
		if err != nil || len(ds) != 2 || ds[1].State != webhook.StateDead || ds[1].LastStatus != 502 || ds[1].LastError != "HTTP 502" {
			t.Fatalf("deliveries: %+v, %v", ds, err)
		}
		if err := webhook.Redeliver(context.Background(), gdb, ds[1].ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "redelivered", func() bool { return states(t, gdb)[webhook.StateDelivered] == 2 })
		got := rcv.requests()
		if last := got[len(got)-1]; last.id != webhook.MessageID(ds[1].ID) || string(last.body) != string(got[0].body) {
			t.Errorf("redelivery: id %s body %s; want %s %s", last.id, last.body, webhook.MessageID(ds[1].ID), got[0].body)
		}
		if err := webhook.Redeliver(context.Background(), gdb, 999, time.Now()); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("Redeliver(999): %v", err)
		}
	})
}

// A write that rolls back leaves no delivery; a disabled webhook gets none.
func TestRolledBackWriteEnqueuesNothing(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		_, hook := setup(t, gdb, always(200))
		errBoom := errors.New("boom")
		err := gdb.Transaction(func(tx *gorm.DB) error {
			if err := webhook.Enqueue(tx, []webhook.Change{{Type: "message_created", ConversationID: 1, MessageID: 1, ActorID: 1, At: 1}}, time.Now()); err != nil {
				return err
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatal(err)
		}
		if s := states(t, gdb); len(s) != 0 {
			t.Fatalf("deliveries after a rollback: %v", s)
		}
		enqueue(t, gdb, 1, 2)
		if err := webhook.Disable(context.Background(), gdb, hook); err != nil {
			t.Fatal(err)
		}
		enqueue(t, gdb, 1, 3)
		if s := states(t, gdb); s[webhook.StatePending] != 1 || len(s) != 1 {
			t.Fatalf("deliveries: %v; want the one enqueued before disabling", s)
		}
		if err := webhook.Disable(context.Background(), gdb, 999); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("Disable(999): %v", err)
		}
	})
}

// Subscriptions filter: a webhook gets only the types it names.
func TestSubscription(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		a, err := webhook.Add(ctx, gdb, "https://a.example/", []string{"message.created"}, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		b, err := webhook.Add(ctx, gdb, "https://b.example/", []string{"*"}, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		err = gdb.Transaction(func(tx *gorm.DB) error {
			return webhook.Enqueue(tx, []webhook.Change{
				{Type: "message_created", ConversationID: 1, MessageID: 1, ActorID: 1, At: 1},
				{Type: "participant_left", ConversationID: 1, ActorID: 2, At: 2},
			}, time.Now())
		})
		if err != nil {
			t.Fatal(err)
		}
		for hook, want := range map[int64]string{a: "message.created", b: "participant.left message.created"} {
			ds, err := webhook.Deliveries(ctx, gdb, hook, 10)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, d := range ds {
				types = append(types, d.EventType)
			}
			if strings.Join(types, " ") != want {
				t.Errorf("webhook %d: %v; want %s", hook, types, want)
			}
		}
		hooks, err := webhook.List(ctx, gdb)
		if err != nil || len(hooks) != 2 || hooks[0].URL != "https://a.example/" || strings.Join(hooks[1].Events, ",") != "*" {
			t.Errorf("List: %+v, %v", hooks, err)
		}
	})
}

// Two workers on one PostgreSQL database send each delivery once.
func TestTwoWorkersSendEachOnce(t *testing.T) {
	gdb := openDB(t, tu.NewDatabase(t, migrations.Set))
	rcv, _ := setup(t, gdb, always(200))
	const convs, each = 20, 10
	for m := int64(1); m <= each; m++ {
		for c := int64(1); c <= convs; c++ {
			enqueue(t, gdb, c, c*1000+m)
		}
	}
	run(t, newWorker(t, gdb, webhook.Options{AllowPrivate: true, Owner: "a", Concurrency: 4, PollInterval: time.Millisecond}))
	run(t, newWorker(t, gdb, webhook.Options{AllowPrivate: true, Owner: "b", Concurrency: 4, PollInterval: time.Millisecond}))
	waitFor(t, "all delivered", func() bool { return states(t, gdb)[webhook.StateDelivered] == convs*each })
	seen := map[string]int{}
	for _, r := range rcv.requests() {
		seen[r.id]++
	}
	if len(seen) != convs*each {
		t.Errorf("%d distinct deliveries; want %d", len(seen), convs*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", id, n)
		}
	}
}

// A target on a loopback address is refused at dial time unless private targets are allowed;
// a redirect is not followed.
func TestTargetsRefused(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		rcv, hook := setup(t, gdb, always(200))
		enqueue(t, gdb, 1, 1)
		if n, err := newWorker(t, gdb, webhook.Options{}).RunOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RunOnce: %d, %v", n, err)
		}
		if got := len(rcv.requests()); got != 0 {
			t.Fatalf("the loopback receiver got %d requests", got)
		}
		ds, err := webhook.Deliveries(ctx, gdb, hook, 1)
		if err != nil || ds[0].State != webhook.StatePending || ds[0].Attempts != 1 || !strings.Contains(ds[0].LastError, "private") {
			t.Fatalf("deliveries: %+v, %v", ds, err)
		}

		// A redirect to the receiver is a failed attempt, the receiver gets nothing.
		if err := webhook.Disable(ctx, gdb, hook); err != nil {
			t.Fatal(err)
		}
		redirect := httptest.NewServer(http.RedirectHandler(rcv.URL+"/hook", http.StatusFound))
		t.Cleanup(redirect.Close)
		secret, _ := webhook.NewSecret()
		other, err := webhook.Add(ctx, gdb, redirect.URL, []string{"*"}, secret, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, gdb, 2, 2)
		if _, err := newWorker(t, gdb, webhook.Options{AllowPrivate: true, RetryMin: time.Hour}).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(rcv.requests()); got != 0 {
			t.Fatalf("the receiver got %d requests through a redirect", got)
		}
		ds, err = webhook.Deliveries(ctx, gdb, other, 1)
		if err != nil || ds[0].LastStatus != http.StatusFound || ds[0].State != webhook.StatePending {
			t.Fatalf("deliveries to the redirect: %+v, %v", ds, err)
		}
	})
}

// A receiver that does not answer costs one timeout, then the attempt fails.
func TestHangingReceiverTimesOut(t *testing.T) {
	gdb := openDB(t, "sqlite:"+filepath.Join(t.TempDir(), "forum.db"))
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(func() { close(release); hang.Close() })
	secret, _ := webhook.NewSecret()
	hook, err := webhook.Add(context.Background(), gdb, hang.URL, []string{"*"}, secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, gdb, 1, 1)
	start := time.Now()
	if _, err := newWorker(t, gdb, webhook.Options{AllowPrivate: true, Timeout: 200 * time.Millisecond}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("attempt took %v with a 200ms timeout", d)
	}
	ds, err := webhook.Deliveries(context.Background(), gdb, hook, 1)
	if err != nil || ds[0].Attempts != 1 || ds[0].State != webhook.StatePending || ds[0].LastError == "" {
		t.Fatalf("deliveries: %+v, %v", ds, err)
	}
	fmt.Fprint(io.Discard, ds[0].LastError)
}

// A receiver that closes every connection without answering, for a while, then comes back: the
// attempts meanwhile fail, and every delivery arrives, in order, within the outage's length of
// its return (the pause in progress at the return is at most about the outage).
func TestReceiverDownThenBack(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		var down sync.Map
		down.Store("down", true)
		var mu sync.Mutex
		var got []int64
		var back time.Time
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := down.Load("down"); ok {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			var b webhook.Body
			if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
				w.WriteHeader(400)
				return
			}
			mu.Lock()
			got = append(got, b.Data.MessageID)
			mu.Unlock()
			w.WriteHeader(204)
		}))
		t.Cleanup(srv.Close)
		secret, _ := webhook.NewSecret()
		if _, err := webhook.Add(context.Background(), gdb, srv.URL, []string{"*"}, secret, time.Now()); err != nil {
			t.Fatal(err)
		}
		run(t, newWorker(t, gdb, webhook.Options{AllowPrivate: true, RetryMin: 20 * time.Millisecond}))
		enqueue(t, gdb, 1, 1, 2, 3, 4, 5)
		const outage = 800 * time.Millisecond
		time.Sleep(outage)
		mu.Lock()
		if len(got) != 0 {
			t.Fatalf("received %v while down", got)
		}
		mu.Unlock()
		var failed int
		if err := gdb.Raw(`SELECT attempts FROM webhook_deliveries ORDER BY delivery_id LIMIT 1`).Scan(&failed).Error; err != nil || failed < 3 {
			t.Fatalf("first delivery's attempts during the outage: %d, %v", failed, err)
		}
		down.Delete("down")
		back = time.Now()
		waitFor(t, "all delivered", func() bool { return states(t, gdb)[webhook.StateDelivered] == 5 })
		if d := time.Since(back); d > outage+200*time.Millisecond {
			t.Errorf("all delivered %v after the return; want within about the outage (%v)", d, outage)
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(got) != "[1 2 3 4 5]" {
			t.Errorf("received %v", got)
		}
	})
}

// A stream waiting for its head's retry keeps its later deliveries out of the due rows: they are
// pushed back with the head, and a new one is due no earlier than the head.
func TestWaitingStreamLeavesTheDueRows(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		setup(t, gdb, always(http.StatusInternalServerError))
		enqueue(t, gdb, 1, 1, 2, 3)
		enqueue(t, gdb, 2, 20)
		w := newWorker(t, gdb, webhook.Options{AllowPrivate: true, RetryMin: time.Hour})
		if n, err := w.RunOnce(ctx); n != 2 || err != nil {
			t.Fatalf("RunOnce: %d, %v; want the two heads", n, err)
		}
		enqueue(t, gdb, 1, 4)
		var due int64
		if err := gdb.Raw(`SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?`,
			time.Now().UnixMilli()).Scan(&due).Error; err != nil || due != 0 {
			t.Fatalf("%d due rows while both streams wait an hour (%v)", due, err)
		}
		var gates []int64
		if err := gdb.Raw(`SELECT DISTINCT next_attempt_at FROM webhook_deliveries WHERE conversation_id = 1`).Scan(&gates).Error; err != nil || len(gates) != 1 {
			t.Fatalf("conversation 1's rows wait until %v (%v); want one time, its head's", gates, err)
		}
		if n, err := w.RunOnce(ctx); n != 0 || err != nil {
			t.Fatalf("RunOnce while waiting: %d, %v", n, err)
		}
	})
}

// A retry that gets through makes the webhook's other streams waiting for their retry due at
// once (the target is back); a first attempt's success does not, so a stream that fails on its
// own is not retried at every delivery the webhook sends.
func TestRetrySuccessWakesWaitingStreams(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		var up sync.Map
		rcv, _ := setup(t, gdb, func(int) int {
			if _, ok := up.Load("up"); ok {
				return http.StatusNoContent
			}
			return http.StatusServiceUnavailable
		})
		enqueue(t, gdb, 1, 1, 2)
		enqueue(t, gdb, 2, 20)
		w := newWorker(t, gdb, webhook.Options{AllowPrivate: true, RetryMin: time.Hour, Jitter: func() float64 { return 0 }})
		if n, err := w.RunOnce(ctx); n != 2 || err != nil {
			t.Fatalf("RunOnce: %d, %v; want the two heads, failed", n, err)
		}
		up.Store("up", true)
		due := func() int64 {
			var n int64
			if err := gdb.Raw(`SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?`,
				time.Now().UnixMilli()).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		// A new stream's first attempt succeeds: the waiting streams keep waiting.
		enqueue(t, gdb, 3, 30)
		if n, err := w.RunOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RunOnce: %d, %v; want conversation 3's delivery", n, err)
		}
		if n := due(); n != 0 {
			t.Fatalf("%d due rows after a first attempt's success; want 0 (both streams wait an hour)", n)
		}
		// Conversation 1's retry comes due and gets through: conversation 2 is woken.
		if err := gdb.Exec(`UPDATE webhook_deliveries SET next_attempt_at = 0 WHERE conversation_id = 1`).Error; err != nil {
			t.Fatal(err)
		}
		if n, err := w.RunOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RunOnce: %d, %v; want conversation 1's head", n, err)
		}
		if n := due(); n != 2 {
			t.Fatalf("%d due rows after a retry's success; want 2 (conversation 1's next, conversation 2's head)", n)
		}
		if n, err := w.RunOnce(ctx); n != 2 || err != nil {
			t.Fatalf("RunOnce: %d, %v; want message 2 and message 20", n, err)
		}
		if s := states(t, gdb); s[webhook.StateDelivered] != 4 || s[webhook.StatePending] != 0 {
			t.Errorf("states %v; want 4 delivered", s)
		}
		var order []int64
		for _, r := range rcv.requests() {
			if r.verified == nil && decode(t, r.body).Data.ConversationID == 1 {
				order = append(order, decode(t, r.body).Data.MessageID)
			}
		}
		if fmt.Sprint(order) != "[1 1 2]" {
			t.Errorf("conversation 1's requests %v; want [1 1 2] (a failed attempt, its retry, then the next)", order)
		}
	})
}
