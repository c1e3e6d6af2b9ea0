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

// hubRendererFake renders what the hub hands over so that the stream's own rendering
// (plainRenderer) shows apart, and counts its calls.
type hubRendererFake struct {
	renders, unreads atomic.Int64
	fail             bool
}

func (r *hubRendererFake) Render(_ context.Context, _ int64, e Entry) ([]byte, bool, error) {
	r.renders.Add(1)
	if r.fail {
		return nil, false, errors.New("database gone")
	}
	return []byte(`{"hub":` + strconv.FormatInt(e.ID, 10) + `}`), true, nil
}

func (r *hubRendererFake) Unread(context.Context, int64) ([]byte, int64, error) {
	r.unreads.Add(1)
	return []byte(`{"unread":1}`), 1, nil
}

func committed(ids ...int64) []Change {
	users := make([]int64, len(ids))
	for i := range users {
		users[i] = 7
	}
	return []Change{{Type: TypeMessageCreated, ConversationID: 1, MessageID: 1, UserIDs: users, EventIDs: ids}}
}

// A committed write's events are rendered once for the user and reach every stream of theirs
// without a read of the log; a hand-over that does not follow the last id sent, or that could not
// be rendered, makes the streams read the log.
func TestHandOver(t *testing.T) {
	for _, tt := range []struct {
		name      string
		logged    int     // events in the log
		handed    []int64 // the ids handed over
		fail      bool    // the hub's rendering fails
		wantData  []string
		wantReads bool // the streams read the log after their first read
	}{
		{name: "follows", logged: 1, handed: []int64{1}, wantData: []string{`{"hub":1}`}},
		{name: "two at once", logged: 2, handed: []int64{1, 2}, wantData: []string{`{"hub":1}`, `{"hub":2}`}},
		{name: "gap", logged: 2, handed: []int64{2}, wantData: []string{`{"n":1}`, `{"n":2}`}, wantReads: true},
		{name: "render fails", logged: 1, handed: []int64{1}, fail: true, wantData: []string{`{"n":1}`}, wantReads: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := &countingLog{memLog: &memLog{}}
			h := NewHub(log, HubOptions{})
			hr := &hubRendererFake{fail: tt.fail}
			h.SetRenderer(hr)
			conns := []*memConn{newMemConn(), newMemConn()}
			for _, c := range conns {
				_, _ = serve(t, h, c, Resume{}, StreamOptions{})
				waitEvents(t, c, TypeUnreadCount, 1)
			}
			readsBefore := log.reads.Load()
			log.add(tt.logged)
			h.Committed(committed(tt.handed...))
			for _, c := range conns {
				got := waitEvents(t, c, TypeMessageCreated, len(tt.wantData))
				var data []string
				for _, e := range got {
					data = append(data, e["data"])
				}
				if !slices.Equal(data, tt.wantData) {
					t.Fatalf("events %v, want %v", data, tt.wantData)
				}
				if !tt.wantReads {
					// The hand-over's unread_count (1, the stream opened with 0) follows the event.
					u := waitEvents(t, c, TypeUnreadCount, 2)
					if u[1]["data"] != `{"unread":1}` || u[1]["id"] != got[len(got)-1]["id"] {
						t.Fatalf("unread_count %v after %v", u[1], got)
					}
				}
			}
			if got := hr.renders.Load(); got != int64(len(tt.handed)) {
				t.Fatalf("hub rendered %d events, want %d: once for the user, not once a stream", got, len(tt.handed))
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
	hr := &hubRendererFake{}
	h.SetRenderer(hr)
	h.Committed([]Change{{Type: TypeMessageCreated, UserIDs: []int64{1, 2}, EventIDs: []int64{5, 9}}})
	if n := hr.renders.Load() + hr.unreads.Load(); n != 0 {
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
