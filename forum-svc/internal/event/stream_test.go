package event

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// memLog is a Log in memory: one user's events, the oldest kept from oldest on.
type memLog struct {
	mu      sync.Mutex
	entries []Entry // ids 1..n
	oldest  int64   // 0: everything kept
}

func (l *memLog) add(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		l.entries = append(l.entries, Entry{ID: int64(len(l.entries) + 1), Type: TypeMessageCreated, ConversationID: 1, MessageID: 1})
	}
}

func (l *memLog) EventsAfter(_ context.Context, _ int64, after int64, limit int) ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	for _, e := range l.entries {
		if e.ID > after && e.ID >= l.oldest && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *memLog) EventBounds(context.Context, int64) (int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := int64(len(l.entries))
	oldest := max(l.oldest, 1)
	if last < oldest {
		oldest = 0
	}
	return oldest, last, nil
}

func (l *memLog) LastEventIDs(_ context.Context, users []int64) (map[int64]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int64]int64{}
	for _, u := range users {
		out[u] = int64(len(l.entries))
	}
	return out, nil
}

type plainRenderer struct{}

func (plainRenderer) Render(_ context.Context, _ int64, e Entry) ([]byte, bool, error) {
	return []byte(`{"n":` + strconv.FormatInt(e.ID, 10) + `}`), true, nil
}

func (plainRenderer) Unread(context.Context, int64) ([]byte, int64, error) {
	return []byte(`{}`), 0, nil
}

// memConn collects what the stream writes; while stuck, a write waits for its deadline and fails
// as a connection whose client reads nothing does.
type memConn struct {
	mu       sync.Mutex
	buf      []byte
	deadline time.Time
	stuck    bool
	started  bool
	direct   bool // Direct: hand-overs may write inline
	flushed  chan struct{}
}

func (c *memConn) Direct() bool { return c.direct }

func (c *memConn) setStuck(v bool) { c.mu.Lock(); c.stuck = v; c.mu.Unlock() }

func newMemConn() *memConn { return &memConn{flushed: make(chan struct{}, 100)} }

func (c *memConn) Start() { c.mu.Lock(); c.started = true; c.mu.Unlock() }

func (c *memConn) Write(p []byte) (int, error) {
	// While stuck, the write waits, as a socket whose buffer is full does, until the client takes
	// again (unstuck) or the deadline passes.
	for {
		c.mu.Lock()
		stuck, deadline := c.stuck, c.deadline
		c.mu.Unlock()
		if !stuck {
			break
		}
		if !time.Now().Before(deadline) {
			return 0, os.ErrDeadlineExceeded
		}
		time.Sleep(min(time.Millisecond, time.Until(deadline)))
	}
	c.mu.Lock()
	c.buf = append(c.buf, p...)
	c.mu.Unlock()
	return len(p), nil
}

func (c *memConn) Flush() error {
	select {
	case c.flushed <- struct{}{}:
	default:
	}
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return nil
}

func (c *memConn) events() []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return readEvents(c.buf)
}

// waitEvents waits until the stream has written n events of typ.
func waitEvents(t *testing.T, c *memConn, typ string, n int) []map[string]string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got []map[string]string
		for _, e := range c.events() {
			if e["event"] == typ {
				got = append(got, e)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events within 5 s, want %d: %v", len(got), typ, n, c.events())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func serve(t *testing.T, h *Hub, conn Conn, from Resume, opts StreamOptions) (cancel func(), done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.Serve(ctx, conn, 7, from, plainRenderer{}, opts) }()
	t.Cleanup(cancel)
	return cancel, errc
}

func ids(events []map[string]string) []string {
	var out []string
	for _, e := range events {
		out = append(out, e["id"])
	}
	return out
}

func TestServeResumes(t *testing.T) {
	for _, tt := range []struct {
		name       string
		kept       int64 // oldest event kept (0: all)
		from       Resume
		wantResync string // the resync event's id, "" for none
		wantIDs    []string
	}{
		{"no id: from the next event", 0, Resume{}, "", []string{"6", "7"}},
		{"replay after 3", 0, Resume{LastEventID: 3, Given: true}, "", []string{"4", "5", "6", "7"}},
		{"replay all", 0, Resume{LastEventID: 0, Given: true}, "", []string{"1", "2", "3", "4", "5", "6", "7"}},
		{"up to date", 0, Resume{LastEventID: 5, Given: true}, "", []string{"6", "7"}},
		{"the next one kept is the first kept", 3, Resume{LastEventID: 2, Given: true}, "", []string{"3", "4", "5", "6", "7"}},
		{"swept past it", 3, Resume{LastEventID: 1, Given: true}, "5", []string{"6", "7"}},
		{"an id never given", 0, Resume{LastEventID: 9, Given: true}, "5", []string{"6", "7"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := &memLog{oldest: tt.kept}
			log.add(5)
			h := NewHub(log, HubOptions{})
			conn := newMemConn()
			_, _ = serve(t, h, conn, tt.from, StreamOptions{})
			waitEvents(t, conn, TypeUnreadCount, 1)
			log.add(2)
			commitNow(h, []Change{{UserIDs: []int64{7}}})
			got := waitEvents(t, conn, TypeMessageCreated, len(tt.wantIDs))
			if want := tt.wantIDs; len(got) != len(want) || ids(got)[0] != want[0] || ids(got)[len(got)-1] != want[len(want)-1] {
				t.Fatalf("ids %v, want %v", ids(got), want)
			}
			for i, id := range ids(got) {
				if id != tt.wantIDs[i] {
					t.Fatalf("ids %v, want %v", ids(got), tt.wantIDs)
				}
			}
			var resync []string
			for _, e := range conn.events() {
				if e["event"] == TypeResync {
					resync = append(resync, e["id"])
				}
			}
			if (tt.wantResync == "") != (len(resync) == 0) || (len(resync) > 0 && (len(resync) != 1 || resync[0] != tt.wantResync)) {
				t.Fatalf("resync events %v, want %q", resync, tt.wantResync)
			}
			if e := conn.events()[1]; tt.wantResync == "" && e["event"] != TypeUnreadCount {
				t.Fatalf("first event %v", e)
			}
		})
	}
}

// More events than a batch: all of them, in order, in several reads.
func TestServeBatches(t *testing.T) {
	log := &memLog{}
	log.add(25)
	h := NewHub(log, HubOptions{})
	conn := newMemConn()
	_, _ = serve(t, h, conn, Resume{Given: true}, StreamOptions{Batch: 4})
	got := waitEvents(t, conn, TypeMessageCreated, 25)
	for i, id := range ids(got) {
		if id != strconv.Itoa(i+1) {
			t.Fatalf("ids %v", ids(got))
		}
	}
}

func TestServeHeartbeatAndRetry(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, HubOptions{})
	conn := newMemConn()
	_, _ = serve(t, h, conn, Resume{}, StreamOptions{Heartbeat: 20 * time.Millisecond, Retry: 1500 * time.Millisecond})
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn.mu.Lock()
		s := string(conn.buf)
		conn.mu.Unlock()
		if len(s) > 0 && s[:len("retry: 1500\n\n")] != "retry: 1500\n\n" {
			t.Fatalf("the stream starts with %q", s)
		}
		if n := countOf(s, Heartbeat); n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two heartbeats within 5 s: %q", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func countOf(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

// A client that does not take its events within the write timeout is cut off.
func TestServeCutsSlowConsumer(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, HubOptions{})
	conn := newMemConn()
	_, done := serve(t, h, conn, Resume{}, StreamOptions{WriteTimeout: 50 * time.Millisecond})
	waitEvents(t, conn, TypeUnreadCount, 1)
	conn.mu.Lock()
	conn.stuck = true
	conn.mu.Unlock()
	log.add(1)
	commitNow(h, []Change{{UserIDs: []int64{7}}})
	select {
	case err := <-done:
		if !errors.Is(err, ErrSlowConsumer) {
			t.Fatalf("stream ended with %v, want ErrSlowConsumer", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stuck client was not cut off")
	}
	if h.Streams() != 0 {
		t.Fatalf("%d streams still subscribed", h.Streams())
	}
}

// The check's error ends the stream; the hub's close ends it with ErrStreamClosed.
func TestServeEnds(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, HubOptions{})
	revoked := errors.New("revoked")
	var fail sync.Once
	failing := make(chan struct{})
	conn := newMemConn()
	_, done := serve(t, h, conn, Resume{}, StreamOptions{CheckEvery: 10 * time.Millisecond, Check: func(context.Context) error {
		select {
		case <-failing:
			return revoked
		default:
			return nil
		}
	}})
	waitEvents(t, conn, TypeUnreadCount, 1)
	fail.Do(func() { close(failing) })
	if err := <-done; !errors.Is(err, revoked) {
		t.Fatalf("stream ended with %v, want the check's error", err)
	}
	conn2 := newMemConn()
	_, done2 := serve(t, h, conn2, Resume{}, StreamOptions{})
	waitEvents(t, conn2, TypeUnreadCount, 1)
	h.Close()
	if err := <-done2; !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("stream ended with %v, want ErrStreamClosed", err)
	}
}

// Without Redis, the poll wakes a stream for events another process wrote.
func TestPollWakes(t *testing.T) {
	log := &memLog{}
	h := NewHub(log, HubOptions{PollEvery: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	conn := newMemConn()
	_, _ = serve(t, h, conn, Resume{}, StreamOptions{})
	waitEvents(t, conn, TypeUnreadCount, 1)
	log.add(3) // no hand-over: written elsewhere
	waitEvents(t, conn, TypeMessageCreated, 3)
}
