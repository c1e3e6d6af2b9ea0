package event

import (
	"context"
	"sync"
	"time"
)

// The hand-over of committed events: a write's events are rendered once for each of their users
// who has a stream in this process, right after the commit, and the bytes go to that user's
// streams, which send them as they are when they follow the last id sent. A stream that finds
// anything else (a gap, an overflow, a wake-up from elsewhere) reads the log after its last id,
// which stays the truth: the hand-over only saves the reads.

// rendered is one write's events for one user, as the user sees them, shared (read only) by the
// user's streams.
type rendered struct {
	events []renderedEvent
	// unread is the user's unread_count data after the write, when its events may change the
	// number (hasUnread).
	unread    []byte
	unreadN   int64
	hasUnread bool
}

type renderedEvent struct {
	id   int64
	typ  string
	data []byte
	ok   bool // false: the user can no longer see the object; the id is skipped
}

// inboxSize bounds a stream's pending hand-overs: beyond, they are dropped for one read of the log.
const inboxSize = 8

// inbox is what a stream was handed since it last looked.
type inbox struct {
	mu      sync.Mutex
	batches []*rendered
	readLog bool // a wake-up carried no events, or the inbox overflowed: read the log
}

func (b *inbox) push(r *rendered) {
	b.mu.Lock()
	if r == nil || b.readLog || len(b.batches) == inboxSize {
		b.readLog, b.batches = true, nil
	} else {
		b.batches = append(b.batches, r)
	}
	b.mu.Unlock()
}

func (b *inbox) take() (batches []*rendered, readLog bool) {
	b.mu.Lock()
	batches, readLog = b.batches, b.readLog
	b.batches, b.readLog = nil, false
	b.mu.Unlock()
	return batches, readLog
}

// hubRenderer is the renderer of the hand-over (SetRenderer).
type hubRenderer struct{ Renderer }

// renderTimeout bounds the rendering of one write's events: past it, the streams read the log.
const renderTimeout = 5 * time.Second

// SetRenderer makes the hub render each committed write's events once per user with a stream in
// this process and hand the bytes to the streams; without it the streams read the log and render
// themselves. r must render as the streams' renderer does.
func (h *Hub) SetRenderer(r Renderer) { h.renderer.Store(&hubRenderer{r}) }

// handOver renders the changes' events for the users with a stream here and hands them over;
// it returns false when it could not (no renderer, or the changes carry no ids), and the streams
// are to be woken to read the log.
func (h *Hub) handOver(changes []Change) bool {
	hr := h.renderer.Load()
	if hr == nil {
		return false
	}
	perUser := map[int64][]Entry{}
	var order []int64
	h.mu.Lock()
	for _, c := range changes {
		if len(c.EventIDs) != len(c.UserIDs) {
			h.mu.Unlock()
			return false
		}
		for i, u := range c.UserIDs {
			if len(h.subs[u]) == 0 {
				continue
			}
			if _, seen := perUser[u]; !seen {
				order = append(order, u)
			}
			perUser[u] = append(perUser[u], Entry{ID: c.EventIDs[i], Type: c.Type, ConversationID: c.ConversationID,
				MessageID: c.MessageID, ActorID: c.ActorID, At: c.At})
		}
	}
	h.mu.Unlock()
	if len(order) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	out := make(map[int64]*rendered, len(order))
	for _, u := range order {
		out[u] = renderFor(ctx, hr, u, perUser[u]) // nil: the streams read the log
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, u := range order {
		for s := range h.subs[u] {
			s.box.push(out[u])
			s.signal()
		}
	}
	return true
}

// renderFor renders a user's events of one write, nil when it fails.
func renderFor(ctx context.Context, r Renderer, userID int64, entries []Entry) *rendered {
	out := &rendered{events: make([]renderedEvent, len(entries))}
	for i, e := range entries {
		data, ok, err := r.Render(ctx, userID, e)
		if err != nil {
			return nil
		}
		out.events[i] = renderedEvent{id: e.ID, typ: e.Type, data: data, ok: ok}
	}
	if changesUnread(entries) {
		data, n, err := r.Unread(ctx, userID)
		if err != nil {
			return nil
		}
		out.unread, out.unreadN, out.hasUnread = data, n, true
	}
	return out
}

// signal wakes the stream, without waiting: a stream already woken keeps its one pending wake-up.
func (s *Sub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wakeToRead wakes the stream to read the log.
func (s *Sub) wakeToRead() {
	s.box.push(nil)
	s.signal()
}
