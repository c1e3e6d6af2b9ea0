package event

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
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
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				go func() { _ = h.Serve(ctx, c, 7, Resume{}, rs[i], StreamOptions{}) }()
				waitEvents(t, c, TypeUnreadCount, 1)
			}
			readsBefore := log.reads.Load()
			log.add(tt.logged)
			for _, r := range rs {
				r.unread.Store(1)
			}
			h.Committed(committed(tt.handed...))
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = h.Serve(ctx, conn, 7, Resume{}, r, StreamOptions{}) }()
	waitEvents(t, conn, TypeUnreadCount, 1)
	h.Committed([]Change{{Type: TypeMessageCreated, UserIDs: []int64{1, 2}, EventIDs: []int64{5, 9}}})
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
