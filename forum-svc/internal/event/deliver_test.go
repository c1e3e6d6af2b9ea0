package event

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// countingLog counts the reads of the log.
type countingLog struct {
	*memLog
	reads atomic.Int64
}

func (l *countingLog) EventsAfter(ctx context.Context, u, after int64, limit int) ([]Entry, error) {
	l.reads.Add(1)
	return l.memLog.EventsAfter(ctx, u, after, limit)
}

// countingRenderer renders with its name, counts its calls, and fails its first failFirst
// renders.
type countingRenderer struct {
	name               string
	renders, failFirst atomic.Int64
	unread             atomic.Int64 // the unread count it renders
}

func (r *countingRenderer) Render(_ context.Context, _ int64, e Entry) ([]byte, bool, error) {
	r.renders.Add(1)
	if r.failFirst.Add(-1) >= 0 {
		return nil, false, errors.New("database gone")
	}
	return []byte(`{"r":"` + r.name + `","id":` + strconv.FormatInt(e.ID, 10) + `}`), true, nil
}

func (r *countingRenderer) Unread(context.Context, int64) ([]byte, int64, error) {
	n := r.unread.Load()
	return []byte(`{"unread":` + strconv.FormatInt(n, 10) + `}`), n, nil
}

// commitNow hands the hub a write that committed already: Prepare, then what it returned.
func commitNow(h *Hub, changes []Change) { h.Prepare(context.Background(), changes)() }

func committed(ids ...int64) []Change {
	users := make([]int64, len(ids))
	for i := range users {
		users[i] = 7
	}
	return []Change{{Type: TypeMessageCreated, ConversationID: 1, MessageID: 1, UserIDs: users, EventIDs: ids}}
}

// A committed write's events are rendered once for the user (and renderer) and reach every
// stream of theirs without a read of the log; a hand-over that does not follow the last id sent,
// or that could not be rendered, makes the streams read the log.
func TestHandOver(t *testing.T) {
	for _, tt := range []struct {
		name        string
		logged      int     // events in the log
		handed      []int64 // the ids handed over
		fail        int64   // renders that fail first
		twoViews    bool    // the user's two streams render with two renderers
		wantIDs     []string
		wantRenders int64 // over all renderers
		wantReads   bool  // the streams read the log after their first read
	}{
		{name: "follows", logged: 1, handed: []int64{1}, wantIDs: []string{"1"}, wantRenders: 1},
		{name: "two at once", logged: 2, handed: []int64{1, 2}, wantIDs: []string{"1", "2"}, wantRenders: 2},
		{name: "two renderers", logged: 1, handed: []int64{1}, twoViews: true, wantIDs: []string{"1"}, wantRenders: 2},
		// The hub renders 2, each stream 1 and 2 from the log.
		{name: "gap", logged: 2, handed: []int64{2}, wantIDs: []string{"1", "2"}, wantRenders: 5, wantReads: true},
		{name: "render fails", logged: 1, handed: []int64{1}, fail: 1, wantIDs: []string{"1"}, wantRenders: 3, wantReads: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := &countingLog{memLog: &memLog{}}
			h := NewHub(log, HubOptions{})
			rs := []*countingRenderer{{name: "a"}, {name: "a"}}
			if tt.twoViews {
				rs[1] = &countingRenderer{name: "b"}
			} else {
				rs[1] = rs[0]
			}
			rs[0].failFirst.Store(tt.fail)
			conns := []*memConn{newMemConn(), newMemConn()}
			for i, c := range conns {
				serveStream(t, h, c, 7, rs[i])
			}
			readsBefore := log.reads.Load()
			log.add(tt.logged)
			for _, r := range rs {
				r.unread.Store(1)
			}
			commitNow(h, committed(tt.handed...))
			for i, c := range conns {
				got := waitEvents(t, c, TypeMessageCreated, len(tt.wantIDs))
				if !slices.Equal(ids(got), tt.wantIDs) {
					t.Fatalf("event ids %v, want %v", ids(got), tt.wantIDs)
				}
				for _, e := range got {
					if want := `{"r":"` + rs[i].name + `","id":` + e["id"] + `}`; e["data"] != want {
						t.Fatalf("stream %d: data %s, want %s", i, e["data"], want)
					}
				}
				// The unread count went from 0 to 1: sent after the events, with the last id.
				u := waitEvents(t, c, TypeUnreadCount, 2)
				if u[1]["data"] != `{"unread":1}` || u[1]["id"] != got[len(got)-1]["id"] {
					t.Fatalf("unread_count %v after %v", u[1], got)
				}
			}
			renders := rs[0].renders.Load()
			if rs[1] != rs[0] {
				renders += rs[1].renders.Load()
			}
			if renders != tt.wantRenders {
				t.Fatalf("%d renders, want %d", renders, tt.wantRenders)
			}
			if reads := log.reads.Load() - readsBefore; (reads > 0) != tt.wantReads {
				t.Fatalf("%d reads of the log after the hand-over, want reads: %v", reads, tt.wantReads)
			}
		})
	}
}

// Users with no stream here cost no rendering.
func TestHandOverSkipsUsersWithoutStreams(t *testing.T) {
	h := NewHub(&memLog{}, HubOptions{})
	r := &countingRenderer{}
	conn := newMemConn()
	serveStream(t, h, conn, 7, r)
	commitNow(h, []Change{{Type: TypeMessageCreated, UserIDs: []int64{1, 2}, EventIDs: []int64{5, 9}}})
	if n := r.renders.Load(); n != 0 {
		t.Fatalf("%d renders for users without a stream", n)
	}
}

func TestInbox(t *testing.T) {
	r := &rendered{}
	for _, tt := range []struct {
		name     string
		pushes   []*rendered
		wantN    int
		wantRead bool
	}{
		{"empty", nil, 0, false},
		{"one", []*rendered{r}, 1, false},
		{"a wake-up to read", []*rendered{r, nil, r}, 0, true},
		{"full", slices.Repeat([]*rendered{r}, inboxSize), inboxSize, false},
		{"overflow", slices.Repeat([]*rendered{r}, inboxSize+1), 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b inbox
			for _, p := range tt.pushes {
				b.push(p)
			}
			got, read := b.take()
			if len(got) != tt.wantN || read != tt.wantRead {
				t.Fatalf("take: %d batches, read %v; want %d, %v", len(got), read, tt.wantN, tt.wantRead)
			}
			if got, read := b.take(); len(got) != 0 || read {
				t.Fatalf("second take: %d batches, read %v; want nothing", len(got), read)
			}
		})
	}
}

func TestApplyRendered(t *testing.T) {
	ev := func(id int64, ok bool) renderedEvent {
		return renderedEvent{id: id, typ: TypeMessageCreated, data: []byte(strconv.FormatInt(id, 10)), ok: ok}
	}
	for _, tt := range []struct {
		name        string
		cursor      int64
		events      []renderedEvent
		wantCursor  int64
		wantApplied bool
		wantGap     bool
		wantIDs     []string
	}{
		{"follows", 4, []renderedEvent{ev(5, true), ev(6, true)}, 6, true, false, []string{"5", "6"}},
		{"sent already", 6, []renderedEvent{ev(5, true), ev(6, true)}, 6, false, false, nil},
		{"partly sent", 5, []renderedEvent{ev(5, true), ev(6, true)}, 6, true, false, []string{"6"}},
		{"gap", 3, []renderedEvent{ev(5, true)}, 3, false, true, nil},
		{"gap inside", 4, []renderedEvent{ev(5, true), ev(7, true)}, 4, false, true, nil},
		{"not visible", 4, []renderedEvent{ev(5, false), ev(6, true)}, 6, true, false, []string{"6"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &writer{}
			cursor, applied, gap := applyRendered(w, tt.cursor, &rendered{events: tt.events})
			if cursor != tt.wantCursor || applied != tt.wantApplied || gap != tt.wantGap {
				t.Fatalf("applyRendered = %d, %v, %v; want %d, %v, %v", cursor, applied, gap, tt.wantCursor, tt.wantApplied, tt.wantGap)
			}
			if got := ids(readEvents(w.buf)); !slices.Equal(got, tt.wantIDs) {
				t.Fatalf("wrote ids %v, want %v", got, tt.wantIDs)
			}
		})
	}
}

func TestMessageEncoding(t *testing.T) {
	reply := Change{Type: TypeMessageCreated, ConversationID: 10, MessageID: 1003, ActorID: 1, At: 1_800_000_000,
		UserIDs: []int64{1, 2}, EventIDs: []int64{41, 7}}
	left := Change{Type: TypeParticipantLeft, ConversationID: 10, ActorID: 2, UserIDs: []int64{2}, EventIDs: []int64{8}}
	for _, tt := range []struct {
		name        string
		changes     []Change
		limit       int
		wantUsers   []int64
		wantChanges bool
	}{
		{"one", []Change{reply}, MaxMessage, []int64{1, 2}, true},
		{"two", []Change{reply, left}, MaxMessage, []int64{1, 2, 2}, true},
		{"too big", []Change{reply, left}, 20, []int64{1, 2, 2}, false},
		{"no ids", []Change{{Type: TypeMessageCreated, UserIDs: []int64{3}}}, MaxMessage, []int64{3}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg := encodeMessage("hub-a", tt.changes, tt.limit)
			if tt.wantChanges && len(msg) > tt.limit {
				t.Fatalf("%d bytes, limit %d", len(msg), tt.limit)
			}
			origin, users, changes := decodeMessage(msg)
			if origin != "hub-a" || !slices.Equal(users, tt.wantUsers) {
				t.Fatalf("users %v, want %v", users, tt.wantUsers)
			}
			if !tt.wantChanges {
				if changes != nil {
					t.Fatalf("changes %v, want none", changes)
				}
				return
			}
			if len(changes) != len(tt.changes) {
				t.Fatalf("changes %v, want %v", changes, tt.changes)
			}
			for i, c := range changes {
				w := tt.changes[i]
				if c.Type != w.Type || c.ConversationID != w.ConversationID || c.MessageID != w.MessageID || c.ActorID != w.ActorID ||
					c.At != w.At || !slices.Equal(c.UserIDs, w.UserIDs) || !slices.Equal(c.EventIDs, w.EventIDs) {
					t.Fatalf("change %d: %+v, want %+v", i, c, w)
				}
			}
		})
	}
	// The users' line alone is a message too.
	if origin, got, changes := decodeMessage("1,2"); origin != "" || !slices.Equal(got, []int64{1, 2}) || changes != nil {
		t.Fatalf("users alone: %q %v %v", origin, got, changes)
	}
	for _, damaged := range []string{"o\n1,2\n[{", "o\n1,2\n[{\"t\":\"nope\",\"u\":[1],\"e\":[1]}]", "o\n1,2\n[{\"t\":\"message_created\",\"u\":[1,2],\"e\":[1]}]"} {
		if _, users, changes := decodeMessage(damaged); changes != nil || !slices.Equal(users, []int64{1, 2}) {
			t.Fatalf("%q: %v %v", damaged, users, changes)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add(encodeMessage("o", []Change{{Type: TypeMessageCreated, ConversationID: 1, UserIDs: []int64{1, 2}, EventIDs: []int64{3, 4}}}, MaxMessage))
	f.Add("1,2,3")
	f.Add("o\n\n[]")
	f.Fuzz(func(t *testing.T, s string) {
		_, users, changes := decodeMessage(s)
		for _, u := range users {
			if u <= 0 {
				t.Fatalf("user %d", u)
			}
		}
		for _, c := range changes {
			if len(c.UserIDs) != len(c.EventIDs) || !slices.Contains(Types, c.Type) {
				t.Fatalf("change %+v", c)
			}
		}
		if changes != nil {
			// What decodes re-encodes to a message that decodes to the same changes.
			_, _, again := decodeMessage(encodeMessage("o", changes, 1<<30))
			if len(again) != len(changes) {
				t.Fatalf("%d changes re-decoded as %d", len(changes), len(again))
			}
		}
	})
}

// Another replica's message with its changes is handed over as this replica's own writes are:
// one rendering for the user, no read of the log.
func TestReceivedHandsOver(t *testing.T) {
	log := &countingLog{memLog: &memLog{}}
	h := NewHub(log, HubOptions{})
	r := &countingRenderer{name: "a"}
	conns := []*memConn{newMemConn(), newMemConn()}
	for _, c := range conns {
		serveStream(t, h, c, 7, r)
	}
	reads := log.reads.Load()
	log.add(1)
	// Its own message, which Redis sends it back, does nothing: its streams had the changes.
	h.received(encodeMessage(h.origin, committed(1), MaxMessage))
	time.Sleep(50 * time.Millisecond)
	if n := r.renders.Load(); n != 0 {
		t.Fatalf("its own message rendered %d times", n)
	}
	h.received(encodeMessage("another-replica", committed(1), MaxMessage))
	for _, c := range conns {
		if got := waitEvents(t, c, TypeMessageCreated, 1); got[0]["data"] != `{"r":"a","id":1}` {
			t.Fatalf("event %v", got[0])
		}
	}
	if n := r.renders.Load(); n != 1 {
		t.Fatalf("%d renders, want 1", n)
	}
	if n := log.reads.Load() - reads; n != 0 {
		t.Fatalf("%d reads of the log", n)
	}
	// The users only: the streams read the log.
	log.add(1)
	h.received("7")
	for _, c := range conns {
		waitEvents(t, c, TypeMessageCreated, 2)
	}
	if n := log.reads.Load() - reads; n == 0 {
		t.Fatal("a message without changes: no read of the log")
	}
}

// Prepare renders with the caller's context before the commit, and the streams get nothing until
// its result runs (the write committed); then they get the events without a read of the log, and
// the delivery is observed in event_stream_delivery_seconds. A result never run (the write rolled
// back) leaves the streams as they were.
func TestPrepareDeliversOnlyOnceCommitted(t *testing.T) {
	log := &countingLog{memLog: &memLog{}}
	h := NewHub(log, HubOptions{})
	r := &ctxRenderer{}
	conn := newMemConn()
	serveStream(t, h, conn, 7, r)
	readsBefore := log.reads.Load()
	observedBefore := deliveriesObserved(t)

	rolledBack := h.Prepare(context.WithValue(context.Background(), testTxKey{}, "tx 1"), committed(1))
	_ = rolledBack // never run
	log.add(1)
	commit := h.Prepare(context.WithValue(context.Background(), testTxKey{}, "tx 2"), committed(1))
	if got := r.seen(); !slices.Equal(got, []string{"tx 1", "tx 2"}) {
		t.Fatalf("rendered with the contexts %v, want both transactions'", got)
	}
	time.Sleep(50 * time.Millisecond)
	for _, e := range conn.events() {
		if e["event"] == TypeMessageCreated {
			t.Fatalf("an event before the commit: %v", conn.events())
		}
	}
	commit()
	got := waitEvents(t, conn, TypeMessageCreated, 1)
	if !slices.Equal(ids(got), []string{"1"}) || got[0]["data"] != `{"tx":"tx 2"}` {
		t.Fatalf("after the commit: %v", got)
	}
	if reads := log.reads.Load() - readsBefore; reads != 0 {
		t.Fatalf("%d reads of the log, want none", reads)
	}
	if n := deliveriesObserved(t) - observedBefore; n != 1 {
		t.Fatalf("%d deliveries observed, want 1", n)
	}
}

// testTxKey names a value of the context Prepare is given (a transaction, in the service).
type testTxKey struct{}

// ctxRenderer renders the testTxKey value of its context, and keeps them.
type ctxRenderer struct {
	mu   sync.Mutex
	ctxs []string
}

func (r *ctxRenderer) Render(ctx context.Context, _ int64, e Entry) ([]byte, bool, error) {
	v, _ := ctx.Value(testTxKey{}).(string)
	r.mu.Lock()
	r.ctxs = append(r.ctxs, v)
	r.mu.Unlock()
	return []byte(`{"tx":"` + v + `"}`), true, nil
}

func (r *ctxRenderer) Unread(context.Context, int64) ([]byte, int64, error) {
	return []byte(`{}`), 0, nil
}

func (r *ctxRenderer) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ctxs)
}

// deliveriesObserved is the number of observations of event_stream_delivery_seconds.
func deliveriesObserved(t *testing.T) uint64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == DeliveryMetric {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0 // not registered yet: nothing observed
}

// A write that needs more than maxTxRenders renderings makes none inside its transaction: they
// are made once it committed, without its context, and the streams get the events all the same.
func TestPrepareRendersManyAfterTheCommit(t *testing.T) {
	h := NewHub(&memLog{}, HubOptions{})
	r := &ctxRenderer{}
	users := make([]int64, maxTxRenders+1)
	ids := make([]int64, len(users))
	conns := make([]*memConn, len(users))
	for i := range users {
		users[i], ids[i], conns[i] = int64(i+1), 1, newMemConn()
		serveStream(t, h, conns[i], users[i], r)
	}
	commit := h.Prepare(context.WithValue(context.Background(), testTxKey{}, "tx"),
		[]Change{{Type: TypeMessageCreated, ConversationID: 1, MessageID: 1, UserIDs: users, EventIDs: ids}})
	if got := r.seen(); len(got) != 0 {
		t.Fatalf("%d renderings in the transaction, want none past %d", len(got), maxTxRenders)
	}
	commit()
	if got := r.seen(); len(got) != len(users) || slices.Contains(got, "tx") {
		t.Fatalf("renderings after the commit with the contexts %q, want %d without the transaction's", got, len(users))
	}
	for i, c := range conns {
		if got := waitEvents(t, c, TypeMessageCreated, 1); got[0]["data"] != `{"tx":""}` {
			t.Fatalf("stream of user %d: %v", users[i], got)
		}
	}
}

// On a direct connection, a hand-over writes the events itself, before the commit's hand-over returns; a
// client that cannot take them at once gets them from the stream's goroutine, once, in order.
func TestInlineWrites(t *testing.T) {
	log := &countingLog{memLog: &memLog{}}
	h := NewHub(log, HubOptions{})
	conn := newMemConn()
	conn.direct = true
	serveStream(t, h, conn, 7, plainRenderer{})
	waitInline(t, h, 7, 1)
	observed := deliveriesObserved(t)
	log.add(1)
	commitNow(h, committed(1))
	var got []string
	for _, e := range conn.events() {
		if e["event"] == TypeMessageCreated {
			got = append(got, e["id"])
		}
	}
	if !slices.Equal(got, []string{"1"}) {
		t.Fatalf("right after the hand-over: message_created ids %v, want [1] written inline", got)
	}
	if n := deliveriesObserved(t) - observed; n != 1 {
		t.Fatalf("%d deliveries observed, want 1", n)
	}

	// A client that takes nothing: the inline write gives up within its bound, and the stream's
	// goroutine sends the rest once the client reads again.
	conn.setStuck(true)
	log.add(1)
	start := time.Now()
	commitNow(h, committed(2))
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the hand-over waited %s for a stuck client", d)
	}
	conn.setStuck(false)
	log.add(1)
	commitNow(h, committed(3))
	evs := waitEvents(t, conn, TypeMessageCreated, 3)
	if !slices.Equal(ids(evs), []string{"1", "2", "3"}) {
		t.Fatalf("message_created ids %v, want 1, 2, 3 once each", ids(evs))
	}
	time.Sleep(50 * time.Millisecond)
	if evs := waitEvents(t, conn, TypeMessageCreated, 3); len(evs) != 3 {
		t.Fatalf("%d message_created events, want 3", len(evs))
	}
	if reads := log.reads.Load(); reads != 1 {
		t.Fatalf("%d reads of the log, want only the first", reads)
	}
}

// waitInline waits until n streams of the user are open for inline writes: Serve publishes a
// stream for them right after its head.
func waitInline(t *testing.T, h *Hub, userID int64, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		h.mu.Lock()
		open := 0
		for s := range h.subs[userID] {
			s.wmu.Lock()
			if s.st != nil {
				open++
			}
			s.wmu.Unlock()
		}
		h.mu.Unlock()
		if open >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the user's streams open for inline writes, want %d", open, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A hand-over writes to maxInline streams itself; the others get the same bytes from their own
// goroutines, once each, without a read of the log.
func TestInlineWritesBeyondTheBound(t *testing.T) {
	log := &countingLog{memLog: &memLog{}}
	h := NewHub(log, HubOptions{})
	conns := make([]*memConn, maxInline+2)
	for i := range conns {
		conns[i] = newMemConn()
		conns[i].direct = true
		serveStream(t, h, conns[i], 7, plainRenderer{})
	}
	waitInline(t, h, 7, len(conns))
	opened := log.reads.Load()
	observed := deliveriesObserved(t)
	log.add(1)
	commitNow(h, committed(1))
	written := 0
	for _, c := range conns {
		for _, e := range c.events() {
			if e["event"] == TypeMessageCreated {
				written++
			}
		}
	}
	if written < maxInline {
		t.Fatalf("right after the hand-over %d streams had the event, want at least %d written inline", written, maxInline)
	}
	for i, c := range conns {
		if evs := waitEvents(t, c, TypeMessageCreated, 1); !slices.Equal(ids(evs), []string{"1"}) {
			t.Fatalf("stream %d: message_created ids %v, want [1]", i, ids(evs))
		}
	}
	time.Sleep(50 * time.Millisecond)
	for i, c := range conns {
		if evs := waitEvents(t, c, TypeMessageCreated, 1); len(evs) != 1 {
			t.Fatalf("stream %d: %d message_created events, want 1", i, len(evs))
		}
	}
	if n := deliveriesObserved(t) - observed; n != uint64(len(conns)) {
		t.Fatalf("%d deliveries observed, want %d", n, len(conns))
	}
	if reads := log.reads.Load() - opened; reads != 0 {
		t.Fatalf("%d reads of the log after the streams opened, want none", reads)
	}
}

// serveStream serves a stream of userID on conn with r until the test ends, and waits for its
// first event (unread_count, sent once it subscribed).
func serveStream(t *testing.T, h *Hub, conn *memConn, userID int64, r Renderer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = h.Serve(ctx, conn, userID, Resume{}, r, StreamOptions{}) }()
	waitEvents(t, conn, TypeUnreadCount, 1)
}
